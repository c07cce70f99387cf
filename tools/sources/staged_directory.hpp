// StagedDirectory: a folder built under a temporary name beside its destination and renamed into
// place only when complete, so that a killed generator never leaves a half-made tree under the
// destination's name for a later run to trust.
//
// The stage is "<parent>/.<name>.partial-XXXXXX". While it exists, its process holds an
// exclusive flock() on it; stages and set-aside old trees (".<name>.old-XXXXXX") whose lock is
// free belong to dead processes and are removed when the next StagedDirectory for the same
// destination is made. SIGINT, SIGTERM and SIGHUP remove the stage (interrupt_cleanup.hpp).
//
// commit() puts the stage in place. A destination that already exists is replaced only when it
// is empty or holds `marker` (a file the stage's owner writes, naming what made the folder), or
// when `replace_any` is set; anything else is refused with a ConfigError before any work, so a
// user's own folder is never deleted by accident.
#pragma once

#include <string>

namespace ffcv::tools {

class StagedDirectory {
 public:
  // Checks the destination (see above), removes stale stages and creates the new one. Throws
  // ConfigError / IoError.
  StagedDirectory(std::string destination, std::string marker, bool replace_any = false);
  // Removes the stage unless commit() succeeded.
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  // Where to build the tree.
  const std::string& path() const { return stage_; }
  // Writes the marker file into the stage, then renames the stage onto the destination (the old
  // destination, if any, is set aside first and removed afterwards). Throws IoError.
  void commit(const std::string& marker_text);

 private:
  std::string destination_, marker_, stage_;
  int lock_fd_ = -1;
  int cleanup_slot_ = -1;
  bool committed_ = false;
};

}  // namespace ffcv::tools
