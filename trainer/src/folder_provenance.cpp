#include "ffcv/train/folder_provenance.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>

#include "ffcv/reader.hpp"
#include "ffcv/storage/url_credentials.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/fnv1a.hpp"
#include "ffcv/util/text_file.hpp"

namespace ffcv::train {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRecordName = "made_from.tsv";
constexpr const char* kRecordHeader =
    "# What the results in this folder were made from; a command whose entries differ is "
    "refused.\n";

// A value on one line of the record.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

// Adds "recipe KEY" entries for every leaf of a TOML table, nested tables as KEY.SUB.
void add_leaves(Provenance& record, const toml::table& table, const std::string& prefix,
                const std::vector<std::string>& skip) {
  for (const auto& [name, node] : table) {
    const std::string key =
        prefix.empty() ? std::string(name.str()) : prefix + "." + std::string(name.str());
    if (key == "logging" || std::find(skip.begin(), skip.end(), key) != skip.end()) continue;
    if (const toml::table* nested = node.as_table()) {
      add_leaves(record, *nested, key, skip);
      continue;
    }
    std::ostringstream text;
    node.visit([&](const auto& value) { text << value; });
    record.add("recipe " + key, text.str());
  }
}

std::vector<std::pair<std::string, std::string>> read_record(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::istringstream lines(read_text_if_present(path));
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    entries.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return entries;
}

std::string record_text(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string text = kRecordHeader;
  for (const auto& [name, value] : entries) text += name + "\t" + value + "\n";
  return text;
}

}  // namespace

void Provenance::add(const std::string& name, const std::string& value) {
  const std::string key = one_line(name);
  for (auto& entry : entries) {
    if (entry.first == key) {
      entry.second = one_line(value);
      return;
    }
  }
  entries.emplace_back(key, one_line(value));
}

void Provenance::add_recipe(const Recipe& recipe, const std::vector<std::string>& skip) {
  const toml::table table = toml::parse(recipe_to_toml(recipe));
  add_leaves(*this, table, "", skip);
}

void Provenance::add_dataset(const std::string& path) {
  try {
    add("data " + url_without_password(path), dataset_identity(path));
  } catch (const Error&) {
    // Unreadable now: the runs that read it fail, and report why.
  }
}

std::string dataset_identity(const std::string& path) {
  const Reader reader(path);
  Fnv1a hash;
  const auto header = reader.header().encode();
  hash.add(header.data(), header.size());
  for (const FieldDescriptor& descriptor : reader.descriptors()) {
    const auto bytes = descriptor.encode();
    hash.add(bytes.data(), bytes.size());
  }
  if (reader.num_samples() > 0 && !reader.fields().empty()) {
    const std::uint8_t* table = reader.column(0, 0) - reader.layout().column_offsets[0];
    hash.add(table, reader.num_samples() * reader.layout().record_size);
  }
  std::uint8_t entry[24];
  for (const AllocEntry& allocation : reader.allocations()) {
    allocation.encode_to(entry);
    hash.add(entry, sizeof entry);
  }
  return std::to_string(reader.file_size()) + " bytes, tables " + hash.hex();
}

std::string folder_identity(const std::string& path) {
  std::vector<std::pair<std::string, std::uintmax_t>> files;
  std::error_code error;
  for (fs::recursive_directory_iterator it(path, error), end; !error && it != end;
       it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    files.emplace_back(fs::relative(it->path(), path, error).string(), it->file_size(error));
  }
  if (error) throw IoError(path, "list the folder", error.value());
  std::sort(files.begin(), files.end());
  Fnv1a hash;
  std::uintmax_t bytes = 0;
  for (const auto& [name, size] : files) {
    hash.add(name);
    hash.add(&size, sizeof size);
    bytes += size;
  }
  return std::to_string(files.size()) + " files, " + std::to_string(bytes) + " bytes, names " +
         hash.hex();
}

bool has_provenance(const std::string& folder) {
  std::error_code error;
  return fs::exists(fs::path(folder) / kRecordName, error);
}

std::vector<ProvenanceDifference> check_provenance(const std::string& folder,
                                                   const Provenance& now) {
  const std::string path = (fs::path(folder) / kRecordName).string();
  std::vector<std::pair<std::string, std::string>> recorded = read_record(path);
  std::map<std::string, std::string> before(recorded.begin(), recorded.end());
  std::vector<ProvenanceDifference> differences;
  bool added = false;
  for (const auto& [name, value] : now.entries) {
    const auto it = before.find(name);
    if (it == before.end()) {
      recorded.emplace_back(name, value);
      added = true;
    } else if (it->second != value) {
      differences.push_back({name, it->second, value});
    }
  }
  if (differences.empty() && added) {
    std::error_code error;
    fs::create_directories(folder, error);
    write_file_atomically(path, std::string_view(record_text(recorded)));
  }
  return differences;
}

std::string describe_differences(const std::vector<ProvenanceDifference>& differences) {
  if (differences.empty()) return "";
  const ProvenanceDifference& first = differences.front();
  std::string name = first.name;
  if (name.rfind("recipe ", 0) == 0) name = name.substr(7);
  std::string text;
  if (first.name.rfind("data ", 0) == 0) {
    text = "the data file " + first.name.substr(5) + " changed (" + first.recorded + " then, " +
           first.now + " now)";
  } else {
    text = name + " was " + first.recorded + " and is now " + first.now;
  }
  if (differences.size() > 1) {
    const std::size_t more = differences.size() - 1;
    text += " (and " + std::to_string(more) + " more difference" + (more == 1 ? "" : "s") + ")";
  }
  return text;
}

std::string move_folder_aside(const std::string& folder) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::string trimmed = folder;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const std::string base = trimmed + "-before-" + stamp;
  std::string aside = base;
  std::error_code error;
  for (int n = 2; fs::exists(aside, error); ++n) aside = base + "-" + std::to_string(n);
  fs::rename(trimmed, aside, error);
  if (error) throw IoError(folder, "move the folder aside to " + aside, error.value());
  return aside;
}

}  // namespace ffcv::train
