#include "ffcv/train/resume_check.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "ffcv/util/errors.hpp"

namespace ffcv::train {
namespace {

// Keys that decide where logs go or how fast the same batches arrive, not what is trained.
const std::vector<std::string> kFreeKeys = {"data.num_workers",
                                            "data.batches_ahead",
                                            "data.cache_readers",
                                            "data.storage_latency_ms",
                                            "data.storage_bandwidth_mbs",
                                            "data.http_connect_timeout_s",
                                            "data.http_stall_timeout_s",
                                            "data.http_request_timeout_s",
                                            "data.http_attempts",
                                            "training.threads",
                                            "dist.address",
                                            "dist.port",
                                            "dist.backend"};

bool free_key(const std::string& key) {
  return key.rfind("logging.", 0) == 0 || key.rfind("checkpoint.", 0) == 0 ||
         std::find(kFreeKeys.begin(), kFreeKeys.end(), key) != kFreeKeys.end();
}

// Every leaf of `table` as (section.key, value as TOML writes it), in the table's order.
void add_leaves(const toml::table& table, const std::string& prefix,
                std::vector<std::pair<std::string, std::string>>& leaves) {
  for (const auto& [name, node] : table) {
    const std::string key =
        prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (const toml::table* nested = node.as_table()) {
      add_leaves(*nested, key, leaves);
      continue;
    }
    std::ostringstream text;
    node.visit([&](const auto& value) { text << value; });
    leaves.emplace_back(key, text.str());
  }
}

std::vector<std::pair<std::string, std::string>> leaves_of(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> leaves;
  add_leaves(toml::parse(text), "", leaves);
  return leaves;
}

// `text` as one word of a shell command, quoted when it holds anything beyond a plain path.
std::string shell_word(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789_./=:@%+,-") == std::string::npos) {
    return text;
  }
  std::string quoted = "'";
  for (const char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::vector<ResumeDifference> resume_differences(const std::string& saved_toml,
                                                 const std::string& now_toml) {
  std::vector<std::pair<std::string, std::string>> now;
  try {
    now = leaves_of(now_toml);
  } catch (const toml::parse_error& error) {
    throw ConfigError("the resolved recipe is not TOML: " + std::string(error.description()));
  }
  std::map<std::string, std::string> saved;
  try {
    for (auto& [key, value] : leaves_of(saved_toml)) saved.emplace(key, value);
  } catch (const toml::parse_error&) {
    return {};  // a checkpoint without a readable recipe: nothing to compare with
  }
  std::vector<ResumeDifference> differences;
  for (const auto& [key, value] : now) {
    if (free_key(key)) continue;
    const auto it = saved.find(key);
    if (it != saved.end() && it->second != value) differences.push_back({key, it->second, value});
  }
  return differences;
}

std::string resume_command(const std::string& checkpoint) {
  const std::filesystem::path checkpoint_path(checkpoint);
  const std::string folder =
      checkpoint_path.has_parent_path() ? checkpoint_path.parent_path().string() : ".";
  return "ffcv run " + shell_word((std::filesystem::path(folder) / "recipe.toml").string()) +
         " --output-dir " + shell_word(folder) + " --set " +
         shell_word("checkpoint.resume=" + checkpoint);
}

void check_resume_recipe(const std::string& checkpoint, const std::string& saved_toml,
                         const std::string& now_toml) {
  const std::vector<ResumeDifference> differences = resume_differences(saved_toml, now_toml);
  if (differences.empty()) return;
  std::string keys;
  for (const ResumeDifference& d : differences) {
    keys += (keys.empty() ? "" : "; ") + d.key + " was " + d.saved + " and is now " + d.now;
  }
  const std::filesystem::path recipe =
      std::filesystem::path(checkpoint).parent_path() / "recipe.toml";
  std::error_code error;
  const std::string how =
      std::filesystem::exists(recipe, error)
          ? "resume with the recipe it saved: " + resume_command(checkpoint)
          : "resume with the recipe and --set overrides of the run that saved it, or start "
            "afresh without checkpoint.resume";
  throw ConfigError("checkpoint.resume: " + checkpoint +
                    " was saved by a run of another recipe, which it would not continue: " + keys +
                    "; " + how);
}

}  // namespace ffcv::train
