// `ffcv write KIND [PATH] -o OUT.beton`: converts a source dataset to a .beton file.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include "commands.hpp"
#include "common/arguments.hpp"
#include "common/output_guard.hpp"
#include "ffcv/dataset_writer.hpp"
#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/fields/scalar_fields.hpp"
#include "ffcv/format/format.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/byte_size.hpp"
#include "ffcv/util/errors.hpp"
#include "ffcv/util/progress_bar.hpp"
#include "source_report.hpp"
#include "sources/archive_source.hpp"
#include "sources/first_samples.hpp"
#include "sources/idx_source.hpp"
#include "sources/image_folder_source.hpp"
#include "sources/imagenet_like.hpp"
#include "sources/npy_source.hpp"
#include "sources/side_rows.hpp"
#include "write_report.hpp"

namespace ffcv::tools {
namespace {

// The longest image side JPEG can store.
constexpr long long kMaxJpegSide = 65500;
constexpr long long kMaxSubset = 1LL << 40;  // samples: far more than any source holds

Arguments write_arguments() {
  Arguments args(
      "write",
      "Write a .beton dataset. KIND is one of:\n"
      "  folder DIR      an image-folder tree, one subfolder per class (image, label);\n"
      "                  JPEG, PNG, BMP, PNM, TIFF or WebP files, told by their\n"
      "                  first bytes and read by that format's decoder only\n"
      "  fashion-mnist   Fashion-MNIST IDX files (image, label), by default from\n"
      "                  Debian's dataset-fashion-mnist\n"
      "  npy             --features X.npy --targets Y.npy (features, target); any\n"
      "                  real numeric or bool dtype, float16 included, stored as it\n"
      "                  is (big-endian made little-endian), or bool features\n"
      "                  bit-packed with --pack-bits\n"
      "  imagenet-like   first generates an ImageNet-like JPEG tree from photographs\n"
      "                  that Debian wallpaper packages ship, then writes it\n"
      "  tar ARCHIVE     a tar archive (gzip, bzip2, xz or zstd too), or a folder of\n"
      "                  .tar/.tar.gz shards, read as it streams, never extracted:\n"
      "                  CLASS/IMAGE members, one tar per class (ImageNet's training\n"
      "                  tar), or WebDataset's KEY.jpg with KEY.cls or KEY.json (image, label)\n"
      "  coco DIR        --annotations FILE: the images in DIR with their COCO boxes (image,\n"
      "                  boxes, labels, crowd, image_id; boxes and labels as RaggedNDArray\n"
      "                  fields, a varying number of rows per image)");
  args.positional("KIND", "folder | fashion-mnist | npy | imagenet-like | tar | coco")
      .positional("PATH",
                  "the image folder (KIND folder, coco), IDX directory (fashion-mnist) or archive "
                  "or folder of shards (tar)",
                  false)
      .option("output", "OUT.beton", "the file to write (replaced only when complete)")
      .option("split", "train|test", "Fashion-MNIST split", "train")
      .option("features", "X.npy", "features array, one row per sample (KIND npy)")
      .option("targets", "Y.npy", "targets array, one row per sample (KIND npy)")
      .flag("pack-bits",
            "KIND npy, bool features only: store each row as numpy.packbits(row) (uint8, "
            "d/8 bytes rounded up, first feature in the high bit); d goes to "
            "OUT.beton.sources.json as packed_bits")
      .option("images-dir", "DIR", "where imagenet-like puts its JPEG tree [default: OUT-jpegs]")
      .option("count", "N", "number of imagenet-like images", "5000")
      .int_range(1, static_cast<long long>(kMaxImagenetLikeCount))
      .option("subset", "N", "write only the source's first N samples")
      .int_range(1, kMaxSubset)
      .option("classes", "N", "number of imagenet-like classes", "100")
      .int_range(1, kMaxImagenetLikeClasses)
      .option("write-mode", "MODE", "image storage: raw | jpg | smart | proportion", "raw")
      .option("max-resolution", "PX", "downscale images whose longer side exceeds PX")
      .int_range(1, kMaxJpegSide)
      .option("jpeg-quality", "Q", "JPEG quality", "90")
      .int_range(1, 100)
      .option("compress-probability", "P", "share stored as JPEG in proportion mode", "0.5")
      .real_range(0, 1)
      .option("smart-threshold", "BYTES", "smart mode stores JPEG above H*W*3 > BYTES")
      .size_range(0, 1ull << 40)
      .flag("same-as-ffcv",
            "encode images exactly as Python FFCV's writer does: decode every JPEG in full, "
            "resize with OpenCV's INTER_AREA and encode every JPEG again (by default a source "
            "JPEG that needs no change is stored as it came, and decoding and resizing take "
            "faster paths; docs/operations.md)")
      .option("page-size", "SIZE", "page size, a power of two (e.g. 8M)", "8M")
      .size_range(kMinPageSize, kMaxPageSize)
      .option("workers", "N", "encoder threads (0: all cores)", "0")
      .int_range(0, kMaxThreads)
      .option("seed", "N", "seed of random write decisions and of imagenet-like", "0")
      .int_range(0, kMaxSeed)
      .option("labels", "FILE",
              "KIND tar: each image's class from FILE's \"IMAGE,CLASS\" lines (IMAGE without "
              "extension; e.g. ImageNet's LOC_val_solution.csv), or from ImageNet's devkit "
              "archive (ILSVRC2012_devkit_t12.tar.gz); labels in class-name order")
      .option("annotations", "FILE",
              "KIND coco: the annotation file (COCO's instances JSON: images, annotations)")
      .option("box-format", "xyxy|xywh",
              "KIND coco: boxes stored as [x1, y1, x2, y2] or as COCO's [x, y, width, height]",
              "xyxy")
      .repeated_option("rows", "NAME=FILE",
                       "add a RaggedNDArray field NAME whose sample i holds line i of FILE.jsonl "
                       "(a JSON array of numbers, or of equal-length arrays: token ids, points) or "
                       "VALUES[OFFSETS[i]:OFFSETS[i+1]] of FILE = VALUES.npy,OFFSETS.npy; as many "
                       "samples as the source, in its order (repeatable)")
      .flag("polygons",
            "KIND coco: also store each annotation's polygons (polygons, polygon_sizes, "
            "polygon_boxes: points, points per polygon, the box each outlines)")
      .option("label-key", "KEY",
              "KIND tar: the key of WebDataset's KEY.json members that holds the class index "
              "(a KEY.cls beside it wins)",
              "label")
      .option("on-bad-image", "fail|skip",
              "a source image that cannot be decoded (KIND folder, imagenet-like, tar, coco): "
              "stop, or "
              "leave it out and list it in OUT.beton.sources.json",
              "fail")
      .flag("shuffle",
            "store the samples in a random order keyed by --seed (FFCV's shuffle_indices), so "
            "that a source in class order mixes classes under QUASI_RANDOM")
      .flag("force", "replace an existing --output (or --images-dir) that is not a .beton or empty")
      .flag("json",
            "print one JSON object at the end: sizes, rate, seconds per stage and what became "
            "of the source JPEGs")
      .flag("quiet", "print nothing but errors");
  return args;
}

RgbImageOptions image_options(const Arguments& args) {
  RgbImageOptions options;
  try {
    options.write_mode = parse_image_write_mode(args.get("write-mode"));
  } catch (const ConfigError& error) {
    throw UsageError(std::string("--write-mode: ") + error.what());
  }
  if (args.has("max-resolution")) {
    options.max_resolution = static_cast<int>(args.get_int("max-resolution"));
  }
  options.jpeg_quality = static_cast<int>(args.get_int("jpeg-quality"));
  options.compress_probability = args.get_double("compress-probability");
  if (args.has("smart-threshold")) options.smart_threshold = args.get_size("smart-threshold");
  options.same_as_ffcv = args.get_flag("same-as-ffcv");
  return options;
}

std::vector<NamedField> image_label_fields(const Arguments& args) {
  return {{"image", std::make_shared<RgbImageField>(image_options(args))},
          {"label", std::make_shared<IntField>()}};
}

std::string output_path(const Arguments& args) {
  if (!args.has("output")) throw UsageError("missing --output OUT.beton");
  return args.get("output");
}

// What parse()'s range checks leave to judge, before any work: --page-size a power of two, a
// known --write-mode and --split.
void check_write_options(const Arguments& args) {
  const std::string split = args.get("split");
  if (split != "train" && split != "test") {
    throw UsageError("--split must be train or test, got '" + split + "'");
  }
  const unsigned long long page_size = args.get_size("page-size");
  if ((page_size & (page_size - 1)) != 0) {
    throw UsageError("--page-size must be a power of two between 2M and 2G, got " +
                     args.get("page-size"));
  }
  image_options(args);
}

// Refuses, before any work, an --output that is one of `inputs` or lies inside one of `folders`,
// and an existing --output that is neither a .beton nor empty without --force.
void check_write_output(const Arguments& args, std::vector<std::string> inputs,
                        std::vector<InputFolder> folders = {}) {
  for (const std::string& option : args.get_all("rows")) {
    for (std::string& file : rows_files(parse_rows_option(option).second)) {
      inputs.push_back(std::move(file));
    }
  }
  OutputRules rules;
  rules.input_files = std::move(inputs);
  rules.input_folders = std::move(folders);
  rules.replaceable = replaceable_without_force;
  rules.replaceable_kind = "a .beton file or an empty file";
  rules.force = args.get_flag("force");
  check_output(output_path(args), rules);
}

// What an image source (a folder, archives) tells beside the .beton: the sidecar's JSON and the
// summary lines, given the samples skipped (source_report.hpp).
struct ImageSourceReport {
  std::function<std::string(const std::vector<SkippedSource>&, const WriteSummary&)> sidecar_json;
  std::function<std::string(const std::vector<SkippedSource>&, const std::string& sidecar)> notes;
};

ImageSourceReport folder_report(const ImageFolderSource& folder, const std::string& root) {
  return {[&folder, root](const std::vector<SkippedSource>& skipped, const WriteSummary& summary) {
            return image_folder_sources_json(root, folder, skipped, summary);
          },
          [&folder](const std::vector<SkippedSource>& skipped, const std::string& sidecar) {
            return image_folder_notes(folder, skipped, sidecar);
          }};
}

// Runs the writer with a progress bar and prints the summary line; for an image source
// (`report`) also the class map and what was left out, stored in a sidecar, and
// --on-bad-image.
int write_dataset(const Arguments& args, const SampleSource& source_samples,
                  std::vector<NamedField> fields, const ImageSourceReport* report = nullptr) {
  const std::string output = output_path(args);
  std::vector<SideRows> sides;
  for (const std::string& option : args.get_all("rows")) {
    const auto [name, file] = parse_rows_option(option);
    sides.emplace_back(name, file);
  }
  const WithSideRows all_samples(source_samples, std::move(sides));
  fields = all_samples.fields(std::move(fields));
  const FirstSamples first(all_samples, args.has("subset")
                                            ? static_cast<std::uint64_t>(args.get_int("subset"))
                                            : all_samples.size());
  const SampleSource& source = first;
  const bool json = args.get_flag("json");
  const bool quiet = args.get_flag("quiet") || json;
  WriterOptions options;
  std::vector<SkippedSource> skipped;
  if (report != nullptr) {
    const std::string on_bad_image = args.get("on-bad-image");
    if (on_bad_image != "fail" && on_bad_image != "skip") {
      throw UsageError("--on-bad-image must be fail or skip, got '" + on_bad_image + "'");
    }
    options.skip_bad_samples = on_bad_image == "skip";
    options.on_skipped = [&](std::uint64_t, const std::string& file, const std::string& error) {
      skipped.push_back({file, error});
    };
  }
  options.page_size = args.get_size("page-size");
  options.num_workers = static_cast<int>(args.get_int("workers"));
  options.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  options.shuffle_indices = args.get_flag("shuffle");
  ProgressBar progress("writing", source.size(), "samples");
  if (!quiet)
    options.on_progress = [&](std::uint64_t done, std::uint64_t) { progress.update(done); };
  DatasetWriter writer(output, std::move(fields), options);
  const WriteSummary summary = writer.write(source);
  std::string notes;
  const std::string sidecar = sources_sidecar_path(output);
  if (report != nullptr) {
    write_file_atomically(sidecar, std::string_view(report->sidecar_json(skipped, summary)));
    notes = stored_jpegs_line(summary.tally) + report->notes(skipped, sidecar);
  } else {
    // A sidecar left by an earlier write describes the file just replaced.
    std::error_code error;
    std::filesystem::remove(sidecar, error);
    if (error) throw IoError(sidecar, "remove", error.value());
  }
  if (!quiet) {
    progress.finish();
    std::printf(
        "wrote %s: %llu samples, %llu pages of %s, %s, %.1f s (%s samples/s)\n", output.c_str(),
        static_cast<unsigned long long>(summary.num_samples),
        static_cast<unsigned long long>(summary.num_pages),
        exact_byte_size_text(summary.page_size).c_str(),
        byte_size_text(static_cast<double>(summary.file_size)).c_str(), summary.seconds,
        ProgressBar::format_rate(summary.num_samples / std::max(summary.seconds, 1e-9)).c_str());
    std::fflush(stdout);
    std::fputs(notes.c_str(), stderr);
  }
  if (json) {
    std::printf("%s\n", write_summary_json(output, summary).c_str());
    std::fflush(stdout);
  }
  return 0;
}

// `npy`: writes the features and targets, and with --pack-bits the number of booleans per
// sample into the sidecar (source_report.hpp) and one line saying it.
int write_npy_dataset(const Arguments& args) {
  if (!args.has("features") || !args.has("targets")) {
    throw UsageError("KIND npy needs --features X.npy and --targets Y.npy");
  }
  check_write_output(args, {args.get("features"), args.get("targets")});
  const NpySource source(args.get("features"), args.get("targets"), args.get_flag("pack-bits"));
  write_dataset(args, source, source.fields());
  const std::uint64_t bits = source.packed_bits();
  if (bits == 0) return 0;
  const std::string sidecar = sources_sidecar_path(output_path(args));
  write_file_atomically(sidecar, std::string_view(packed_npy_sources_json(
                                     args.get("features"), args.get("targets"), bits)));
  if (!args.get_flag("quiet") && !args.get_flag("json")) {
    std::printf(
        "features: %llu booleans packed into %llu bytes per sample (read them back with "
        "mask_bits = %llu; packed_bits in %s)\n",
        static_cast<unsigned long long>(bits), static_cast<unsigned long long>((bits + 7) / 8),
        static_cast<unsigned long long>(bits), sidecar.c_str());
    std::fflush(stdout);
  }
  return 0;
}

int write_imagenet_like(const Arguments& args) {
  const std::string output = output_path(args);
  ImagenetLikeOptions options;
  options.output_dir =
      args.get_optional("images-dir")
          .value_or(std::filesystem::path(output).replace_extension("").string() + "-jpegs");
  // The tree is replaced as a whole, so the output must not lie inside it.
  check_write_output(args, {}, {{options.output_dir, false}});
  options.replace_any_folder = args.get_flag("force");
  options.count = static_cast<std::uint64_t>(args.get_int("count"));
  options.num_classes = static_cast<int>(args.get_int("classes"));
  options.seed = static_cast<std::uint64_t>(args.get_int("seed"));
  options.num_workers = static_cast<int>(args.get_int("workers"));
  const bool quiet = args.get_flag("quiet") || args.get_flag("json");
  ProgressBar progress("generating", options.count, "images");
  if (!quiet)
    options.on_progress = [&](std::uint64_t done, std::uint64_t) { progress.update(done); };
  const ImagenetLikeSummary summary = generate_imagenet_like(options);
  if (!quiet) {
    progress.finish();
    std::printf("generated %llu JPEGs in %s from %d photographs: mean %.0fx%.0f px, %.0f KB each\n",
                static_cast<unsigned long long>(summary.count), options.output_dir.c_str(),
                summary.photos_used, summary.mean_width, summary.mean_height,
                summary.total_bytes / 1000.0 / std::max<std::uint64_t>(summary.count, 1));
  }
  const ImageFolderSource source(options.output_dir);
  const ImageSourceReport report = folder_report(source, options.output_dir);
  return write_dataset(args, source, image_label_fields(args), &report);
}

// `tar`: the archive (or the folder of shards) walked twice, listed then read (archive_source);
// the listing seeks over a plain tar's data, nested tars' too.
int write_archive(const Arguments& args) {
  if (!args.has("PATH")) throw UsageError("KIND tar needs the ARCHIVE (or a folder of shards)");
  if (args.get_flag("shuffle")) {
    throw UsageError(
        "--shuffle needs random access to the samples, which an archive read as "
        "it streams does not give: shuffle when loading (order = random or "
        "quasi_random)");
  }
  const std::vector<std::string> archives = archives_at(args.get("PATH"));
  std::vector<std::string> inputs = archives;
  if (args.has("labels")) inputs.push_back(args.get("labels"));
  check_write_output(args, inputs);
  const ArchiveSource source(archives, args.get_optional("labels"), args.get("label-key"));
  const ImageSourceReport report{
      [&](const std::vector<SkippedSource>& skipped, const WriteSummary& summary) {
        return archive_sources_json(archives, source, skipped, summary);
      },
      [&](const std::vector<SkippedSource>& skipped, const std::string& sidecar) {
        return archive_notes(source, skipped, sidecar);
      }};
  return write_dataset(args, source, image_label_fields(args), &report);
}

// `coco`: the images of the annotation file, their boxes, labels and crowd flags.
int write_coco(const Arguments& args) {
  if (!args.has("PATH")) throw UsageError("KIND coco needs the images folder PATH");
  if (!args.has("annotations")) throw UsageError("KIND coco needs --annotations FILE");
  BoxFormat format = BoxFormat::kXyxy;
  try {
    format = parse_box_format(args.get("box-format"));
  } catch (const ConfigError& error) {
    throw UsageError(std::string("--box-format: ") + error.what());
  }
  const std::string images_dir = args.get("PATH"), annotations = args.get("annotations");
  check_write_output(args, {annotations}, {{images_dir, /*top_level_allowed=*/true}});
  const CocoSource source(images_dir, annotations, format,
                          std::make_shared<RgbImageField>(image_options(args)),
                          args.get_flag("polygons"));
  const ImageSourceReport report{
      [&](const std::vector<SkippedSource>& skipped, const WriteSummary& summary) {
        return coco_sources_json(images_dir, annotations, source, skipped, summary);
      },
      [&](const std::vector<SkippedSource>& skipped, const std::string& sidecar) {
        return coco_notes(source, skipped, sidecar);
      }};
  return write_dataset(args, source, source.fields(), &report);
}

}  // namespace

int write_command(const CommandArgs& argv) {
  Arguments args = write_arguments();
  if (!args.parse(argv)) return 0;
  check_write_options(args);
  const std::string kind = args.get("KIND");
  if (args.get_flag("pack-bits") && kind != "npy") {
    throw UsageError("--pack-bits applies to KIND npy only");
  }
  if (args.has("labels") && kind != "tar") throw UsageError("--labels applies to KIND tar only");
  if (args.get("label-key") != "label" && kind != "tar") {
    throw UsageError("--label-key applies to KIND tar only");
  }
  if ((args.has("annotations") || args.get("box-format") != "xyxy" || args.get_flag("polygons")) &&
      kind != "coco") {
    throw UsageError("--annotations, --box-format and --polygons apply to KIND coco only");
  }
  if (kind == "folder") {
    if (!args.has("PATH")) throw UsageError("KIND folder needs the image folder PATH");
    check_write_output(args, {}, {{args.get("PATH"), /*top_level_allowed=*/true}});
    const ImageFolderSource source(args.get("PATH"));
    const ImageSourceReport report = folder_report(source, args.get("PATH"));
    return write_dataset(args, source, image_label_fields(args), &report);
  }
  if (kind == "fashion-mnist") {
    const std::string idx_dir = args.get_optional("PATH").value_or(kFashionMnistDir);
    check_write_output(args, {}, {{idx_dir, false}});
    const IdxSource source = IdxSource::fashion_mnist(idx_dir, args.get("split"));
    return write_dataset(args, source, image_label_fields(args));
  }
  if (kind == "npy") return write_npy_dataset(args);
  if (kind == "imagenet-like") return write_imagenet_like(args);
  if (kind == "tar") return write_archive(args);
  if (kind == "coco") return write_coco(args);
  throw UsageError("unknown KIND '" + kind +
                   "' (folder, fashion-mnist, npy, imagenet-like, tar, coco)");
}

Arguments write_command_arguments() { return write_arguments(); }

void check_write_command_options(const Arguments& args) { check_write_options(args); }

}  // namespace ffcv::tools
