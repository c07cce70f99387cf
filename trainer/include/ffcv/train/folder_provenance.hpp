// What a folder of results was made from, recorded in it (FOLDER/made_from.tsv) when its first
// results are made and compared on every later command into it.
//
// A grid's folder and an ablation's folder are resumable: running the same command again skips
// what is finished. That is only right while "the same command" makes the same results, so the
// folder records what its results depend on beyond the points or cells themselves: the
// resolved recipe (every key, with the command line's --set applied; for an ablation, its
// dataset section and, for a training sweep, its recipe) and the identity of every data file
// read. A later command whose record differs is refused, naming the difference, rather than
// tabling old numbers under a new command; the caller names the flag that starts afresh.
//
// The record is one line per entry, "NAME<TAB>VALUE", e.g.
//   recipe training.epochs       2
//   data /data/train.beton       5242880 bytes, tables 0f3a9c2d81e4b756
// Entries present on only one side are not compared (a data file that could not be read, which
// then fails its runs and finishes none; a recipe key added by a newer version, with its
// default), and are added to the record.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ffcv/train/recipe.hpp"

namespace ffcv::train {

struct Provenance {
  std::vector<std::pair<std::string, std::string>> entries;  // in the order added

  void add(const std::string& name, const std::string& value);
  // "recipe SECTION.KEY" -> the key's value as TOML writes it, for every key of `recipe` except
  // the logging section (where logs go, not what they say) and the keys in `skip`.
  void add_recipe(const Recipe& recipe, const std::vector<std::string>& skip = {});
  // "data PATH" -> dataset_identity(PATH); nothing when the file cannot be read.
  void add_dataset(const std::string& path);
};

// A .beton's identity: "N bytes, tables HEX", HEX an FNV-1a digest of its header, field
// descriptors, metadata table (every sample's label, image size, ...) and allocation table
// (every payload's size and place). The same for a copy of the file, or the same samples written
// again with the same settings; another for any change of a sample's size, label or order, or of
// the writer's settings. Not a digest of the payloads: it reads the tables only (a URL's through
// range requests), never the images. Throws the Reader's FormatError / IoError.
std::string dataset_identity(const std::string& path);

// A folder tree's identity: "N files, B bytes, names HEX", HEX a digest of every file's relative
// path and size. Throws IoError when it cannot be listed.
std::string folder_identity(const std::string& path);

struct ProvenanceDifference {
  std::string name;
  std::string recorded;  // in the folder's record
  std::string now;       // what this command would make
};

// Compares `now` with FOLDER/made_from.tsv and returns the differences (none when the folder
// has no record yet). When there are none, the record is written or completed with `now`'s
// entries it lacks. Throws IoError when the record cannot be written.
std::vector<ProvenanceDifference> check_provenance(const std::string& folder,
                                                   const Provenance& now);

// Whether FOLDER holds a record.
bool has_provenance(const std::string& folder);

// "training.epochs was 2 and is now 3 (and 2 more differences)": for an error line.
std::string describe_differences(const std::vector<ProvenanceDifference>& differences);

// Renames FOLDER to FOLDER-before-YYYYMMDD-HHMMSS (-2, -3, ... when taken), beside it, and
// returns the new name: results set aside, never deleted. Throws IoError.
std::string move_folder_aside(const std::string& folder);

}  // namespace ffcv::train
