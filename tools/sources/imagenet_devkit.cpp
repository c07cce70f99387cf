#include "sources/imagenet_devkit.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "ffcv/util/errors.hpp"
#include "sources/archive_walk.hpp"
#include "sources/mat_file.hpp"

namespace ffcv::tools {
namespace {

// The devkit's meta.mat is 2.5 MB and its ground truth 300 KB: a member far over that is no devkit.
constexpr std::uint64_t kMaxDevkitMemberBytes = 64ULL << 20;
constexpr const char* kMeta = "data/meta.mat";
constexpr const char* kGroundTruth = "data/ILSVRC2012_validation_ground_truth.txt";

// ILSVRC2012_ID -> WNID of the synsets without children.
std::map<long long, std::string> leaf_synsets(const MatArray& synsets, const std::string& where) {
  if (synsets.kind != MatArray::Kind::kStruct) {
    throw ConfigError(where + ": `synsets` is not a struct array");
  }
  std::map<long long, std::string> leaves;
  for (std::uint64_t e = 0; e < synsets.element_count(); ++e) {
    const MatArray& id = synsets.field(e, "ILSVRC2012_ID");
    const MatArray& wnid = synsets.field(e, "WNID");
    const MatArray& children = synsets.field(e, "num_children");
    if (id.numbers.size() != 1 || children.numbers.size() != 1 || wnid.text.empty()) {
      throw ConfigError(where + ": synset " + std::to_string(e + 1) +
                        " lacks ILSVRC2012_ID, WNID or num_children");
    }
    if (children.numbers[0] != 0) continue;
    leaves.emplace(std::llround(id.numbers[0]), wnid.text);
  }
  if (leaves.empty()) throw ConfigError(where + ": no synset without children");
  return leaves;
}

}  // namespace

std::map<std::string, std::string> read_imagenet_devkit(const std::string& archive) {
  std::vector<std::uint8_t> meta, truth;
  walk_archives({archive}, [&](const ArchiveMember& member, MemberData& data) {
    if (member.kind != MemberKind::kFile) return;
    if (member.path.ends_with(kMeta)) meta = data.read(kMaxDevkitMemberBytes);
    if (member.path.ends_with(kGroundTruth)) truth = data.read(kMaxDevkitMemberBytes);
  });
  if (meta.empty() || truth.empty()) {
    throw ConfigError(archive + ": not ImageNet's devkit: it lacks " +
                      std::string(meta.empty() ? kMeta : kGroundTruth));
  }
  const std::string meta_path = archive + ":" + kMeta;
  const std::map<std::string, MatArray> variables = read_mat_file(meta, meta_path);
  const auto synsets = variables.find("synsets");
  if (synsets == variables.end()) throw ConfigError(meta_path + ": no `synsets` variable");
  const std::map<long long, std::string> leaves = leaf_synsets(synsets->second, meta_path);

  std::map<std::string, std::string> labels;
  std::istringstream lines(std::string(truth.begin(), truth.end()));
  std::string line;
  for (std::uint64_t number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(line, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const auto leaf = leaves.find(id);
    if (used == 0 || line.find_first_not_of(" \t", used) != std::string::npos ||
        leaf == leaves.end()) {
      throw ConfigError(archive + ":" + kGroundTruth + ":" + std::to_string(number) +
                        ": expected an ILSVRC2012_ID of a class (1.." +
                        std::to_string(leaves.rbegin()->first) + "), got '" + line.substr(0, 40) +
                        "'");
    }
    char stem[40];
    std::snprintf(stem, sizeof stem, "ILSVRC2012_val_%08llu",
                  static_cast<unsigned long long>(number));
    labels.emplace(stem, leaf->second);
  }
  if (labels.empty()) throw ConfigError(archive + ": " + kGroundTruth + " names no image");
  return labels;
}

}  // namespace ffcv::tools
