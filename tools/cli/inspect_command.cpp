// `ffcv inspect FILE`: fields, counts, pages, bytes per field and image statistics; one
// sample's metadata (--sample); one sample's image as PNG (--export).
#include <cstdio>

#include "arguments.hpp"
#include "commands.hpp"
#include "ffcv/errors.hpp"
#include "ffcv/json_text.hpp"
#include "ffcv/reader.hpp"
#include "inspect/dataset_report.hpp"

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
  if (index < 0 || static_cast<std::uint64_t>(index) >= reader.num_samples()) {
    throw UsageError("--" + name + " '" + text + "' is not a sample index in 0.." +
                     std::to_string(reader.num_samples() - 1));
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

void export_image(const Reader& reader, std::uint64_t sample, const std::string& field_name,
                  const std::string& path) {
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
  const FieldValue value = reader.decode(sample, field);
  const auto* image = std::get_if<RgbImage>(&value);
  if (image == nullptr)
    throw UsageError("field '" + reader.fields()[field].name + "' is not an image");
#ifdef FFCV_HAVE_IMGCODECS
  cv::Mat rgb(image->height, image->width, CV_8UC3,
              const_cast<std::uint8_t*>(image->pixels.data()));
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  bool written = false;
  try {
    written = cv::imwrite(path, bgr);
  } catch (const cv::Exception& error) {
    throw Error("cannot write '" + path + "': " + error.what());
  }
  if (!written) throw Error("cannot write '" + path + "' (unwritable path or unknown extension)");
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
  args.positional("FILE", "the .beton file")
      .flag("json", "print one JSON object instead of text")
      .option("sample", "I", "show sample I's metadata instead")
      .pair_option("export", "I PATH.png", "decode sample I's image and write it to PATH.png")
      .option("field", "NAME", "image field to export [default: the first RGBImage field]");
  if (!args.parse(argv)) return 0;
  const Reader reader(args.get("FILE"));
  if (args.has("export")) {
    const auto [index, path] = args.get_pair("export");
    export_image(reader, sample_index(index, "export", reader),
                 args.get_optional("field").value_or(""), path);
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
  const DatasetReport report = DatasetReport::build(reader);
  std::fputs((args.get_flag("json") ? report.to_json() + "\n" : report.to_text()).c_str(), stdout);
  return 0;
}

}  // namespace ffcv::tools
