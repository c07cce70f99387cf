// Samples straight from tar archives, without extracting them (`ffcv write tar`): an image
// folder packed as a tar (CLASS/IMAGE members), ImageNet's training tar (one tar per class),
// or WebDataset shards (KEY.jpg beside KEY.cls, the class index as text, or beside KEY.json, the
// class index under a key, "label" by default); or any of these with
// a labels file naming each image's class (ImageNet's validation tar, whose images sit in no
// class folder). Samples are (image: RGBImage, label: Int).
//
// Two passes over the archives (archive_walk.hpp). The first lists the members and reads the
// .cls labels; it finds a damaged or truncated archive (a compressed one is checked to the end of
// its stream, gzip's CRC included), an image without its label, or a member over its size limit,
// before anything is written. Members are taken as a folder write takes files: hidden ones
// (hidden_path) are passed over; a hard link to an image member before it is an image with that
// member's data; symbolic links, devices, FIFOs and files without an image extension are left out
// and listed in ignored_members() with what they are. Labels then number the classes as
// torchvision's ImageFolder numbers the extracted folders (class names sorted), or come from the
// .cls members. The second pass runs on a thread of its own while the writer encodes: it streams
// the members in stored order into a buffer bounded in members and bytes that load() takes them
// from, so memory stays constant however large the archives. Samples come in stored order: an
// archive whose members are sorted by name (`tar
// --sort=name`) gives exactly the file a folder write of its extraction gives.
//
// load(i) expects the writer's access pattern (indices claimed in increasing order by a few
// workers, within a bounded window); a source in another order (the writer's --shuffle) is
// refused by the command.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "archive_walk.hpp"
#include "ffcv/dataset_writer.hpp"

namespace ffcv::tools {

// The largest member read: an image, and a .cls or .json label. A member over its limit is
// refused by name from its header, before any of its data is read.
inline constexpr std::uint64_t kMaxImageMemberBytes = 256ULL << 20;
inline constexpr std::uint64_t kMaxLabelMemberBytes = 1ULL << 20;

class ArchiveSource final : public SampleSource {
 public:
  // `archives`: tar files (optionally compressed), walked in this order. `labels_file` (e.g.
  // ImageNet's validation labels as Kaggle's LOC_val_solution.csv): one "IMAGE,CLASS" line per
  // image, IMAGE its file name without extension; its class names, sorted, are the labels, in
  // place of the archives' own. `json_label_key`: the key of KEY.json members that holds the
  // class index (a KEY.cls beside it wins). Throws ConfigError for archives with no images,
  // images outside any class folder, images without a label, or a label that is not a whole
  // number >= 0; IoError for an archive that cannot be read whole.
  explicit ArchiveSource(std::vector<std::string> archives,
                         std::optional<std::string> labels_file = std::nullopt,
                         std::string json_label_key = "label");
  ~ArchiveSource() override;  // stops and joins the reading thread

  std::uint64_t size() const override { return samples_.size(); }
  std::vector<FieldValue> load(std::uint64_t index) const override;
  std::string describe(std::uint64_t index) const override;

  // The class names by label (empty when the labels come from .cls members).
  const std::vector<std::string>& class_names() const { return classes_; }
  // Where the labels come from: "class folders", "cls" (KEY.cls or KEY.json members) or the
  // labels file.
  const std::string& labels_from() const { return labels_from_; }
  const std::vector<std::string>& ignored_members() const { return ignored_; }

 private:
  struct Sample {
    std::string path;
    std::size_t archive = 0;
    std::int64_t label = 0;
    std::optional<std::uint64_t> link_to;  // a hard link: the earlier sample whose data it is
  };
  void list_members();
  void label_from_cls(const std::map<std::string, std::int64_t>& cls,
                      const std::map<std::string, std::string>& broken);
  void label_from_folders(const std::vector<std::string>& folders);
  void label_from_file();
  void set_classes(const std::vector<std::string>& names);              // sorted, distinct
  void label_by_class(const std::vector<std::string>& sample_classes);  // one name per sample
  std::string describe_sample(const Sample& sample) const;
  void read_members() const;  // the second pass, on reader_

  std::vector<std::string> archives_;
  std::optional<std::string> labels_file_;
  std::string json_label_key_;
  std::vector<Sample> samples_;
  std::set<std::uint64_t> link_targets_;  // samples that hard links later in the stream share
  std::vector<std::string> classes_;
  std::vector<std::string> ignored_;
  std::string labels_from_;

  // The second pass: member bytes by sample index, at most kAhead (and kAheadBytes, or one
  // member) not yet taken by load().
  static constexpr std::uint64_t kAhead = 256;
  static constexpr std::uint64_t kAheadBytes = 512ULL << 20;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  mutable std::map<std::uint64_t, std::vector<std::uint8_t>> ready_;
  mutable std::uint64_t ready_bytes_ = 0;
  mutable std::exception_ptr read_error_;
  mutable std::atomic<bool> stop_{false};
  mutable std::thread reader_;
  mutable bool started_ = false;
};

// The archives KIND tar reads from PATH: the file itself, or a folder's .tar, .tar.gz and .tgz
// files in name order (a set of WebDataset shards). Throws ConfigError when there are none.
std::vector<std::string> archives_at(const std::string& path);

}  // namespace ffcv::tools
