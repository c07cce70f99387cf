#include "archive_source.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>

#include "ffcv/util/errors.hpp"
#include "image_file.hpp"
#include "imagenet_devkit.hpp"

#ifdef FFCV_HAVE_NLOHMANN_JSON
#include <nlohmann/json.hpp>
#endif

namespace ffcv::tools {
namespace {

// WebDataset's key: the member's path without its extension ("shard/000123" of "shard/000123.jpg").
std::string key_of(const std::string& path) {
  const std::string extension = lowercase_extension(path);
  return path.substr(0, path.size() - extension.size());
}

std::int64_t parse_cls(const std::vector<std::uint8_t>& bytes, const std::string& where) {
  std::string text(bytes.begin(), bytes.end());
  text.erase(text.find_last_not_of(" \t\r\n") + 1);
  text.erase(0, text.find_first_not_of(" \t\r\n"));
  std::size_t used = 0;
  std::int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < 0) {
    throw ConfigError(where +
                      ": a .cls member must hold a class index (a whole number >= 0), "
                      "got '" +
                      text.substr(0, 40) + "'");
  }
  return value;
}

// The class index under the top-level `key` of a KEY.json member ({"label": 3, ...}): nullopt
// when the object has no such key; a member that is no JSON object, or a value that is not a
// whole number >= 0, is `problem` (naming the member) for the caller to report should the sample
// need this label.
std::optional<std::int64_t> json_label(const std::vector<std::uint8_t>& bytes,
                                       const std::string& key, const std::string& where,
                                       std::string& problem) {
#ifdef FFCV_HAVE_NLOHMANN_JSON
  const nlohmann::json document =
      nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    problem = where + ": a .json member must hold a JSON object with the class index under \"" +
              key + "\"" + (document.is_discarded() ? ", and this is not valid JSON" : "");
    return std::nullopt;
  }
  const auto found = document.find(key);
  if (found == document.end()) return std::nullopt;
  if (found->is_number_unsigned() &&
      found->get<std::uint64_t>() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(found->get<std::uint64_t>());
  }
  problem = where + ": \"" + key + "\" must hold a class index (a whole number >= 0), got " +
            found->dump().substr(0, 40);
  return std::nullopt;
#else
  (void)bytes;
  problem = where + ": this build reads no .json labels (built without nlohmann-json3-dev) for \"" +
            key + "\"";
  return std::nullopt;
#endif
}

// The member's file name without folders and extension ("ILSVRC2012_val_00000001").
std::string stem_of(const std::string& path) {
  const std::string name = path.substr(path.find_last_of('/') + 1);
  return name.substr(0, name.size() - lowercase_extension(name).size());
}

// --labels FILE: one line per image, "IMAGE,CLASS" or "IMAGE CLASS", IMAGE the file name without
// extension, CLASS the first word after the separator (so Kaggle's LOC_val_solution.csv, whose
// second column begins with the synset, reads as it is); a first line "ImageId,..." is a header.
std::map<std::string, std::string> read_labels_file(const std::string& path) {
  // ImageNet's devkit archive: its numeric ground truth, named through its meta.mat.
  if (tar_suffix_length(path) > 0) return read_imagenet_devkit(path);
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot open the labels file '" + path + "'");
  std::map<std::string, std::string> labels;
  std::string line;
  for (std::uint64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (number == 1 && line.starts_with("ImageId,")) continue;
    const auto separator = line.find_first_of(", \t");
    const auto start =
        separator == std::string::npos ? separator : line.find_first_not_of(", \t", separator);
    if (separator == 0 || start == std::string::npos) {
      throw ConfigError(path + ":" + std::to_string(number) +
                        ": expected IMAGE,CLASS (or IMAGE CLASS), got '" + line.substr(0, 60) +
                        "'");
    }
    const std::string image = stem_of(line.substr(0, separator));
    const std::string name = line.substr(start, line.find_first_of(" \t", start) - start);
    if (!labels.emplace(image, name).second) {
      throw ConfigError(path + ":" + std::to_string(number) + ": a second line for '" + image +
                        "'");
    }
  }
  if (labels.empty()) throw ConfigError("the labels file '" + path + "' names no image");
  return labels;
}

}  // namespace

std::vector<std::string> archives_at(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (!fs::is_directory(path, error)) {
    if (!fs::is_regular_file(path, error)) throw ConfigError("no archive at '" + path + "'");
    return {path};
  }
  std::vector<std::string> archives;
  for (const auto& entry : fs::directory_iterator(path)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && tar_suffix_length(name) > 0 && !name.starts_with(".")) {
      archives.push_back(entry.path().string());
    }
  }
  std::sort(archives.begin(), archives.end());
  if (archives.empty()) {
    throw ConfigError("folder '" + path + "' holds no .tar, .tar.gz or .tgz files");
  }
  return archives;
}

ArchiveSource::ArchiveSource(std::vector<std::string> archives,
                             std::optional<std::string> labels_file, std::string json_label_key)
    : archives_(std::move(archives)),
      labels_file_(std::move(labels_file)),
      json_label_key_(std::move(json_label_key)) {
  list_members();
}

ArchiveSource::~ArchiveSource() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (reader_.joinable()) reader_.join();
}

void ArchiveSource::list_members() {
  std::map<std::string, std::int64_t> cls;       // WebDataset labels by shard and key
  std::map<std::string, std::int64_t> json;      // the same from KEY.json members
  std::map<std::string, std::string> broken;     // KEY.json members that hold no usable label
  std::map<std::string, std::uint64_t> by_path;  // the samples listed so far, for hard links
  std::vector<std::string> folders;              // each sample's class folder
  walk_archives(archives_, [&](const ArchiveMember& member, MemberData& data) {
    if (hidden_path(member.path)) return;  // as a folder write passes over hidden files
    const std::string extension = lowercase_extension(member.path);
    const std::string key = std::to_string(member.archive) + ":" + key_of(member.path);
    const std::string where = archives_[member.archive] + ": " + member.path;
    const bool image = has_image_extension(member.path);
    if (member.kind == MemberKind::kOther || (member.kind == MemberKind::kHardLink && !image)) {
      ignored_.push_back(where + " (" + member.kind_name + ")");
      return;
    }
    if (extension == ".cls") {
      cls[key] = parse_cls(data.read(kMaxLabelMemberBytes), where);
    } else if (extension == ".json") {
      std::string problem;
      const auto label =
          json_label(data.read(kMaxLabelMemberBytes), json_label_key_, where, problem);
      if (label) json[key] = *label;
      if (!problem.empty()) broken[key] = problem;
    } else if (image && member.kind == MemberKind::kHardLink) {
      const auto target = by_path.find(std::to_string(member.archive) + ":" + member.link_target);
      if (target == by_path.end()) {
        ignored_.push_back(where + " (hard link to " + member.link_target +
                           ", which is no image member before it)");
        return;
      }
      samples_.push_back({member.path, member.archive, 0, target->second});
      link_targets_.insert(target->second);
      folders.push_back(member.folder);
    } else if (image) {
      check_member_size(where, member.size, kMaxImageMemberBytes);  // before the second pass
      by_path[std::to_string(member.archive) + ":" + member.path] = samples_.size();
      samples_.push_back({member.path, member.archive, 0, std::nullopt});
      folders.push_back(member.folder);
    } else {
      ignored_.push_back(where);
    }
  });
  if (samples_.empty()) throw ConfigError("the archives hold no image files");
  for (const std::string& archive : archives_) check_compressed_stream(archive);
  if (labels_file_) {
    label_from_file();
  } else if (!cls.empty() || !json.empty() || !broken.empty()) {
    cls.insert(json.begin(), json.end());  // a .cls beside a .json wins
    label_from_cls(cls, broken);
  } else {
    label_from_folders(folders);
  }
}

void ArchiveSource::label_from_cls(const std::map<std::string, std::int64_t>& cls,
                                   const std::map<std::string, std::string>& broken) {
  labels_from_ = "cls";
  for (Sample& sample : samples_) {
    const std::string key = std::to_string(sample.archive) + ":" + key_of(sample.path);
    const auto label = cls.find(key);
    if (label == cls.end() && broken.contains(key)) throw ConfigError(broken.at(key));
    if (label == cls.end()) {
      throw ConfigError(describe_sample(sample) + " has no label (no " + key_of(sample.path) +
                        ".cls beside it in its shard, nor a \"" + json_label_key_ + "\" in " +
                        key_of(sample.path) + ".json)");
    }
    sample.label = label->second;
  }
}

void ArchiveSource::label_from_folders(const std::vector<std::string>& folders) {
  labels_from_ = "class folders";
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    if (folders[i].empty()) {
      throw ConfigError(describe_sample(samples_[i]) +
                        " is in no class folder (expected CLASS/IMAGE members, one tar per "
                        "class, KEY.cls labels beside the images, or --labels FILE)");
    }
  }
  set_classes(folders);
  label_by_class(folders);
}

void ArchiveSource::label_from_file() {
  labels_from_ = *labels_file_;
  const std::map<std::string, std::string> by_name = read_labels_file(*labels_file_);
  std::vector<std::string> names;
  for (const auto& [image, name] : by_name) names.push_back(name);
  std::vector<std::string> sample_classes;
  for (const Sample& sample : samples_) {
    const auto found = by_name.find(stem_of(sample.path));
    if (found == by_name.end()) {
      throw ConfigError(describe_sample(sample) + " has no label in " + *labels_file_ +
                        " (no line for '" + stem_of(sample.path) + "')");
    }
    sample_classes.push_back(found->second);
  }
  set_classes(names);  // every class the file names, as ImageFolder keeps empty folders
  label_by_class(sample_classes);
}

void ArchiveSource::set_classes(const std::vector<std::string>& names) {
  const std::set<std::string> distinct(names.begin(), names.end());
  classes_.assign(distinct.begin(), distinct.end());
}

void ArchiveSource::label_by_class(const std::vector<std::string>& sample_classes) {
  for (std::size_t i = 0; i < samples_.size(); ++i) {
    samples_[i].label =
        std::lower_bound(classes_.begin(), classes_.end(), sample_classes[i]) - classes_.begin();
  }
}

std::string ArchiveSource::describe_sample(const Sample& sample) const {
  return archives_[sample.archive] + ": " + sample.path;
}

void ArchiveSource::read_members() const {
  std::uint64_t next = 0;
  std::map<std::uint64_t, std::vector<std::uint8_t>> linked;  // hard links' targets, by sample
  try {
    walk_archives(
        archives_,
        [&](const ArchiveMember& member, MemberData& data) {
          if (hidden_path(member.path) || member.kind == MemberKind::kOther ||
              !has_image_extension(member.path)) {
            return;
          }
          const bool listed = next < samples_.size() && samples_[next].path == member.path &&
                              samples_[next].archive == member.archive;
          if (member.kind == MemberKind::kHardLink && !listed) return;  // a link left out
          if (!listed) {
            throw IoError(archives_[member.archive], "read",
                          "it changed since it was listed (member " + member.path + ")");
          }
          const Sample& sample = samples_[next];
          std::vector<std::uint8_t> bytes =
              sample.link_to ? linked.at(*sample.link_to) : data.read(kMaxImageMemberBytes);
          if (link_targets_.contains(next)) linked.emplace(next, bytes);
          std::unique_lock lock(mutex_);
          changed_.wait(lock, [&] {
            return stop_ || (ready_.size() < kAhead && ready_bytes_ < kAheadBytes) ||
                   ready_.empty();
          });
          if (stop_) return;
          ready_bytes_ += bytes.size();
          ready_.emplace(next++, std::move(bytes));
          changed_.notify_all();
        },
        &stop_);
  } catch (...) {
    std::lock_guard lock(mutex_);
    read_error_ = std::current_exception();
  }
  changed_.notify_all();
}

std::vector<FieldValue> ArchiveSource::load(std::uint64_t index) const {
  std::vector<std::uint8_t> bytes;
  {
    std::unique_lock lock(mutex_);
    if (!started_) {
      started_ = true;
      reader_ = std::thread([this] { read_members(); });
    }
    changed_.wait(lock, [&] { return ready_.contains(index) || read_error_ || stop_; });
    const auto found = ready_.find(index);
    if (found == ready_.end()) {
      if (read_error_) std::rethrow_exception(read_error_);
      throw IoError(describe(index), "read", "the archive reader stopped");
    }
    bytes = std::move(found->second);
    ready_bytes_ -= bytes.size();
    ready_.erase(found);
  }
  changed_.notify_all();
  return {image_value(std::move(bytes), describe(index)), samples_[index].label};
}

std::string ArchiveSource::describe(std::uint64_t index) const {
  return describe_sample(samples_[index]);
}

}  // namespace ffcv::tools
