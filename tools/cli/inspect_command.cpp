// `ffcv inspect FILE`: fields, counts, pages, bytes per field and image statistics; one
// sample's metadata (--sample); one sample's image as PNG (--export).
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "commands.hpp"
#include "common/arguments.hpp"
#include "common/output_guard.hpp"
#include "ffcv/reader.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/json_text.hpp"
#include "ffcv/util/progress_bar.hpp"
#include "inspect/dataset_report.hpp"
#include "inspect/dataset_verify.hpp"
#include "write_report.hpp"

#ifdef FFCV_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace ffcv::tools {
namespace {

std::uint64_t sample_index(const std::string& text, const std::string& name, const Reader& reader) {
  long long index = -1;
  try {
    std::size_t used = 0;
    index = std::stoll(text, &used);
    if (used != text.size()) index = -1;
  } catch (const std::exception&) {
  }
  if (reader.num_samples() == 0) {
    throw UsageError("--" + name + " " + text + ": " + reader.path() + " has no samples");
  }
  if (index < 0 || static_cast<std::uint64_t>(index) >= reader.num_samples()) {
    throw UsageError("--" + name + " must be a sample index between 0 and " +
                     std::to_string(reader.num_samples() - 1) + " (" + reader.path() + " has " +
                     std::to_string(reader.num_samples()) + " samples), got " + text);
  }
  return static_cast<std::uint64_t>(index);
}

std::string sample_json(const Reader& reader, std::uint64_t sample) {
  std::string out = "{\"sample\": " + std::to_string(sample) + ", \"fields\": {";
  for (std::size_t f = 0; f < reader.fields().size(); ++f) {
    out += (f ? ", " : "") + json_quote(reader.fields()[f].name) + ": " +
           reader.fields()[f].field->describe(reader.column(sample, f));
  }
  return out + "}}";
}

// The image formats --export writes, by extension.
std::vector<std::string> export_extensions() {
  std::vector<std::string> known;
#ifdef FFCV_HAVE_IMGCODECS
  for (const char* extension :
       {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".tif", ".tiff", ".webp"}) {
    if (cv::haveImageWriter(std::string("x") + extension)) known.push_back(extension);
  }
#endif
  return known;
}

// Refuses, before decoding, an export path OpenCV would fail on with its own internals: a
// folder, an unknown extension, a missing parent folder.
void check_export_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) {
    throw UsageError("--export " + path + ": is a directory; give a file name such as " +
                     (fs::path(path) / "sample.png").string());
  }
  const std::vector<std::string> known = export_extensions();
  std::string extension = fs::path(path).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!known.empty() && std::find(known.begin(), known.end(), extension) == known.end()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UsageError("--export " + path + ": " +
                     (extension.empty() ? std::string("no extension")
                                        : "unknown extension '" + extension + "'") +
                     "; the image formats are " + list);
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, error)) {
    throw Error("cannot write '" + path + "': no folder '" + parent.string() + "'");
  }
}

// True when `path` starts with the signature of an image format --export writes: an existing
// export may be replaced without --force, any other file may not.
bool is_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[4] = {};
  in.read(head, sizeof head);
  const std::string start(head, static_cast<std::size_t>(in.gcount()));
  for (const std::string& signature :
       {std::string("\x89PNG", 4), std::string("\xFF\xD8\xFF", 3), std::string("BM"),
        std::string("II*"), std::string("MM\0*", 4), std::string("P6"), std::string("RIFF")}) {
    if (start.starts_with(signature)) return true;
  }
  return false;
}

void export_image(const Reader& reader, std::uint64_t sample, const std::string& field_name,
                  const std::string& path, bool force) {
  std::size_t field = reader.fields().size();
  for (std::size_t f = 0; f < reader.fields().size(); ++f) {
    const bool wanted = field_name.empty() ? reader.fields()[f].field->type_name() == "RGBImage"
                                           : reader.fields()[f].name == field_name;
    if (wanted) {
      field = f;
      break;
    }
  }
  if (field == reader.fields().size()) {
    throw UsageError(field_name.empty() ? "the file has no RGBImage field"
                                        : "no field named '" + field_name + "'");
  }
  check_export_path(path);
  OutputRules rules;
  rules.option = "--export";
  rules.input_files = {reader.path()};
  rules.replaceable = is_image_file;
  rules.replaceable_kind = "an image file";
  rules.force = force;
  check_output(path, rules);
  const FieldValue value = reader.decode(sample, field);
  const auto* image = std::get_if<RgbImage>(&value);
  if (image == nullptr)
    throw UsageError("field '" + reader.fields()[field].name + "' is not an image");
#ifdef FFCV_HAVE_IMGCODECS
  cv::Mat rgb(image->height, image->width, CV_8UC3,
              const_cast<std::uint8_t*>(image->pixels.data()));
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<std::uint8_t> encoded;
  bool written = false;
  try {
    written = cv::imencode(std::filesystem::path(path).extension().string(), bgr, encoded);
  } catch (const cv::Exception& error) {
    throw Error("cannot write '" + path + "': " + error.err);
  }
  if (!written) throw Error("cannot write '" + path + "'");
  write_file_atomically(path, encoded);
  std::printf("exported sample %llu field '%s' (%dx%d) to %s\n",
              static_cast<unsigned long long>(sample), reader.fields()[field].name.c_str(),
              image->width, image->height, path.c_str());
#else
  (void)path;
  throw Error("this build has no OpenCV imgcodecs, so it cannot write image files");
#endif
}

}  // namespace

int inspect_command(const CommandArgs& argv) {
  Arguments args("inspect",
                 "Describe a .beton file: fields, samples, pages, bytes per field and "
                 "image statistics. The file is fully validated first.");
  args.positional("FILE", "the .beton file: a path, or an http(s):// URL (see ffcv --help)")
      .flag("json", "print one JSON object instead of text")
      .option("sample", "I", "show sample I's metadata instead")
      .pair_option("export", "I PATH.png", "decode sample I's image and write it to PATH.png")
      .option("field", "NAME", "image field to export [default: the first RGBImage field]")
      .flag("force", "let --export replace an existing file that is not an image")
      .flag("verify",
            "decode every sample of every field as the loader would (JPEGs in full, with the "
            "strict rules), list the bad ones; exit 1 when any is bad")
      .option("workers", "N", "threads for --verify (0: all cores)", "0")
      .int_range(0, 1024);
  if (!args.parse(argv)) return 0;
  const Reader reader(args.get("FILE"));
  if (args.has("export")) {
    const auto [index, path] = args.get_pair("export");
    export_image(reader, sample_index(index, "export", reader),
                 args.get_optional("field").value_or(""), path, args.get_flag("force"));
    return 0;
  }
  if (args.has("sample")) {
    const std::uint64_t sample = sample_index(args.get("sample"), "sample", reader);
    const std::string json = sample_json(reader, sample);
    if (args.get_flag("json")) {
      std::printf("%s\n", json.c_str());
    } else {
      std::printf("%s: sample %llu\n", reader.path().c_str(),
                  static_cast<unsigned long long>(sample));
      for (std::size_t f = 0; f < reader.fields().size(); ++f) {
        std::printf("  %-16s %s\n", reader.fields()[f].name.c_str(),
                    reader.fields()[f].field->describe(reader.column(sample, f)).c_str());
      }
    }
    return 0;
  }
  if (args.get_flag("verify")) {
    const bool json = args.get_flag("json");
    ProgressBar progress("verifying", reader.num_samples(), "samples");
    const VerifyReport report = verify_dataset(reader, static_cast<int>(args.get_int("workers")),
                                               [&](std::uint64_t done, std::uint64_t) {
                                                 if (!json) progress.update(done);
                                               });
    if (!json) progress.finish();
    std::fputs((json ? verify_json(reader, report) + "\n" : verify_text(reader, report)).c_str(),
               stdout);
    return report.bad.empty() ? 0 : 1;
  }
  const DatasetReport report = DatasetReport::build(reader);
  // What the write did with the source JPEGs, which the file cannot tell: from its sidecar.
  const std::optional<EncodeTally> sources =
      reader.remote() ? std::nullopt : sidecar_tally(args.get("FILE"));
  if (args.get_flag("json")) {
    std::string json = report.to_json();
    if (sources)
      json.insert(json.rfind('}'), ", \"source_images\": " + encode_tally_json(*sources));
    std::printf("%s\n", json.c_str());
  } else {
    std::fputs(report.to_text().c_str(), stdout);
    if (sources) std::fputs(stored_jpegs_line(*sources).c_str(), stdout);
  }
  return 0;
}

}  // namespace ffcv::tools
