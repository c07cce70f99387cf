// `ffcv write tar`: tar archives, gzip-compressed tars, ImageNet's tar of class tars and
// WebDataset shards give the same file as writing the extracted folder; damaged archives,
// missing labels and members that are no image each get a clear line or a listed skip, and
// leave no output behind. The archives are made here with GNU tar (`--sort=name`, so that their
// member order is the folder write's sorted order).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/loader.hpp"
#include "ffcv/reader.hpp"
#include "sources/archive_source.hpp"
#include "test_support.hpp"

using namespace ffcv;

namespace {

// The shell command's exit status.
int sh(const std::string& command) { return std::system(command.c_str()); }

// DIR/tree: CLASS/NN.jpg for three classes (the third empty of images, holding a text file).
void make_tree(const test::TempDir& dir) {
  namespace fs = std::filesystem;
  const char* classes[] = {"cat", "dog", "eel"};
  for (int c = 0; c < 3; ++c) {
    fs::create_directories(dir.file(std::string("tree/") + classes[c]));
    for (int i = 0; i < 4; ++i) {
      test::write_file(
          dir.file(std::string("tree/") + classes[c] + "/0" + std::to_string(i) + ".jpg"),
          encode_jpeg(test::gradient_image(40 + 6 * i, 30 + 5 * c, c * 10 + i), 92));
    }
  }
  std::ofstream(dir.file("tree/dog/notes.txt")) << "not an image";
}

std::string write(const std::string& kind, const std::string& path, const std::string& output,
                  std::string& out, const std::string& extra = "") {
  const int status = test::run_cli("write " + kind + " " + path + " --output " + output +
                                       " --write-mode jpg --workers 2 --quiet " + extra,
                                   out);
  return status == 0 ? test::text_of(output) : "exit " + std::to_string(status) + ": " + out;
}

}  // namespace

TEST_CASE("a tar, a gzip tar and a tar of class tars give the folder write's file", "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  std::string out;
  const std::string folder = write("folder", dir.file("tree"), dir.file("folder.beton"), out);
  REQUIRE(folder.size() > 1000);
  const std::string tree = dir.file("tree");
  REQUIRE(sh("tar --sort=name -cf " + dir.file("tree.tar") + " -C " + tree + " cat dog eel") == 0);
  REQUIRE(sh("tar --sort=name -czf " + dir.file("tree.tar.gz") + " -C " + tree + " cat dog eel") ==
          0);
  std::filesystem::create_directories(dir.file("class_tars"));
  for (const char* c : {"cat", "dog", "eel"}) {
    REQUIRE(sh("tar --sort=name -cf " + dir.file(std::string("class_tars/") + c + ".tar") + " -C " +
               tree + "/" + c + " .") == 0);
  }
  REQUIRE(sh("tar --sort=name -cf " + dir.file("imagenet.tar") + " -C " + dir.file("class_tars") +
             " cat.tar dog.tar eel.tar") == 0);
  CHECK(write("tar", dir.file("tree.tar"), dir.file("tar.beton"), out) == folder);
  CHECK_THAT(test::text_of(dir.file("tar.beton.sources.json")),
             Catch::Contains("\"classes\": [\"cat\", \"dog\", \"eel\"]") &&
                 Catch::Contains("dog/notes.txt"));
  CHECK(write("tar", dir.file("tree.tar.gz"), dir.file("gz.beton"), out) == folder);
  CHECK(write("tar", dir.file("imagenet.tar"), dir.file("nested.beton"), out) == folder);
}

TEST_CASE("WebDataset shards take their labels from the .cls or .json members", "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  std::string out;
  const std::string folder = write("folder", dir.file("tree"), dir.file("folder.beton"), out);
  // Two shards, keys in the folder write's order, the label of each in KEY.cls.
  namespace fs = std::filesystem;
  int key = 0;
  for (const char* shard : {"shard-000", "shard-001"}) fs::create_directories(dir.file(shard));
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i, ++key) {
      const std::string shard = key < 6 ? "shard-000" : "shard-001";
      const std::string name = (key < 10 ? "0" : "") + std::to_string(key);
      fs::copy_file(dir.file("tree/" +
                             std::string(c == 0   ? "cat"
                                         : c == 1 ? "dog"
                                                  : "eel") +
                             "/0" + std::to_string(i) + ".jpg"),
                    dir.file(shard + "/" + name + ".jpg"));
      std::ofstream(dir.file(shard + "/" + name + ".cls")) << c << "\n";
    }
  }
  fs::create_directories(dir.file("shards"));
  for (const char* shard : {"shard-000", "shard-001"}) {
    REQUIRE(sh("tar --sort=name -cf " + dir.file(std::string("shards/") + shard + ".tar") + " -C " +
               dir.file(shard) + " .") == 0);
  }
  CHECK(write("tar", dir.file("shards"), dir.file("wds.beton"), out) == folder);
  CHECK_THAT(test::text_of(dir.file("wds.beton.sources.json")),
             Catch::Contains("\"labels\": \"cls\""));
  // An image without its label is refused before anything is written.
  fs::remove(dir.file("shard-001/07.cls"));
  REQUIRE(sh("tar --sort=name -cf " + dir.file("shards/shard-001.tar") + " -C " +
             dir.file("shard-001") + " .") == 0);
  CHECK_THAT(write("tar", dir.file("shards"), dir.file("missing.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("07.jpg has no label"));
  CHECK_FALSE(fs::exists(dir.file("missing.beton")));

  // The same labels from KEY.json members, under the default key and under --label-key.
  for (const std::string& key : {std::string("label"), std::string("class_id")}) {
    INFO("key " << key);
    for (int k = 0; k < 12; ++k) {
      const std::string shard = k < 6 ? "shard-000" : "shard-001";
      const std::string name = (k < 10 ? "0" : "") + std::to_string(k);
      fs::remove(dir.file(shard + "/" + name + ".cls"));
      std::ofstream(dir.file(shard + "/" + name + ".json"))
          << "{\"caption\": \"a label\", \"" << key << "\": " << k / 4 << ", \"width\": 40}";
    }
    for (const char* shard : {"shard-000", "shard-001"}) {
      REQUIRE(sh("tar --sort=name -cf " + dir.file(std::string("shards/") + shard + ".tar") +
                 " -C " + dir.file(shard) + " .") == 0);
    }
    CHECK(write("tar", dir.file("shards"), dir.file("json.beton"), out,
                key == "label" ? "" : "--label-key " + key) == folder);
  }
  // The label is the object's own key, parsed as JSON: not one nested deeper, nor the word as a
  // value.
  for (int k = 0; k < 12; ++k) {
    const std::string shard = k < 6 ? "shard-000" : "shard-001";
    const std::string name = (k < 10 ? "0" : "") + std::to_string(k);
    std::ofstream(dir.file(shard + "/" + name + ".json"))
        << "{\"meta\": {\"class_id\": 9}, \"name\": \"class_id\", \"class_id\": " << k / 4 << "}";
  }
  for (const char* shard : {"shard-000", "shard-001"}) {
    REQUIRE(sh("tar --sort=name -cf " + dir.file(std::string("shards/") + shard + ".tar") + " -C " +
               dir.file(shard) + " .") == 0);
  }
  CHECK(write("tar", dir.file("shards"), dir.file("nested.beton"), out, "--label-key class_id") ==
        folder);
  // A member that is no JSON object names itself.
  std::ofstream(dir.file("shard-001/08.json")) << "[\"class_id\", 1]";
  REQUIRE(sh("tar --sort=name -cf " + dir.file("shards/shard-001.tar") + " -C " +
             dir.file("shard-001") + " .") == 0);
  CHECK_THAT(write("tar", dir.file("shards"), dir.file("list.beton"), out, "--label-key class_id"),
             Catch::Contains("exit 1") && Catch::Contains("08.json") &&
                 Catch::Contains("must hold a JSON object"));
  // A label that is not a class index names its member.
  std::ofstream(dir.file("shard-001/08.json")) << "{\"class_id\": \"dog\"}";
  REQUIRE(sh("tar --sort=name -cf " + dir.file("shards/shard-001.tar") + " -C " +
             dir.file("shard-001") + " .") == 0);
  CHECK_THAT(write("tar", dir.file("shards"), dir.file("word.beton"), out, "--label-key class_id"),
             Catch::Contains("exit 1") && Catch::Contains("08.json") &&
                 Catch::Contains("must hold a class index"));
  CHECK_FALSE(fs::exists(dir.file("word.beton")));
}

TEST_CASE("damaged archives and images get one clear line or a listed skip", "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  namespace fs = std::filesystem;
  std::string out;
  REQUIRE(sh("tar --sort=name -cf " + dir.file("tree.tar") + " -C " + dir.file("tree") +
             " cat dog eel") == 0);
  // Truncated inside a member's data (the first member is the folder cat/, a header block; the
  // second, cat/00.jpg, has its header at 512 and its data from 1024): refused while listing,
  // naming the archive, and no output.
  const auto whole = test::read_file(dir.file("tree.tar"));
  REQUIRE(whole.size() > 2048);
  test::write_file(dir.file("cut.tar"),
                   std::vector<std::uint8_t>(whole.begin(), whole.begin() + 1024 + 100));
  CHECK_THAT(write("tar", dir.file("cut.tar"), dir.file("cut.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("cut.tar: cannot read the archive"));
  CHECK_FALSE(fs::exists(dir.file("cut.beton")));
  // Not an archive at all.
  test::write_file(dir.file("plain.tar"), std::vector<std::uint8_t>(3000, 7));
  CHECK_THAT(write("tar", dir.file("plain.tar"), dir.file("plain.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("plain.tar"));
  // An image member that does not decode: an error naming it, or with --on-bad-image skip a
  // listed skip and the other samples written.
  test::write_file(dir.file("tree/dog/01.jpg"), {0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3});
  REQUIRE(sh("tar --sort=name -cf " + dir.file("bad.tar") + " -C " + dir.file("tree") +
             " cat dog eel") == 0);
  CHECK_THAT(write("tar", dir.file("bad.tar"), dir.file("bad.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("bad.tar: dog/01.jpg"));
  CHECK_FALSE(fs::exists(dir.file("bad.beton")));
  const std::string skipped =
      write("tar", dir.file("bad.tar"), dir.file("skip.beton"), out, "--on-bad-image skip");
  CHECK_THAT(skipped.substr(0, 20), !Catch::Contains("exit"));
  CHECK_THAT(test::text_of(dir.file("skip.beton.sources.json")),
             Catch::Contains("\"file\": \"" + dir.file("bad.tar") + ": dog/01.jpg\""));
  // An archive whose members sit in no class folder, and an archive with no images.
  REQUIRE(sh("tar -cf " + dir.file("flat.tar") + " -C " + dir.file("tree/cat") + " 00.jpg") == 0);
  CHECK_THAT(write("tar", dir.file("flat.tar"), dir.file("flat.beton"), out),
             Catch::Contains("00.jpg is in no class folder"));
  REQUIRE(sh("tar -cf " + dir.file("dot.tar") + " -C " + dir.file("tree/cat") + " .") == 0);
  CHECK_THAT(write("tar", dir.file("dot.tar"), dir.file("dot.beton"), out),
             Catch::Contains("dot.tar: ./") && Catch::Contains("is in no class folder"));
  REQUIRE(sh("tar -cf " + dir.file("text.tar") + " -C " + dir.file("tree/dog") + " notes.txt") ==
          0);
  CHECK_THAT(write("tar", dir.file("text.tar"), dir.file("text.beton"), out),
             Catch::Contains("hold no image files"));
  // --shuffle needs random access.
  CHECK_THAT(write("tar", dir.file("tree.tar"), dir.file("shuffled.beton"), out, "--shuffle"),
             Catch::Contains("exit 2") && Catch::Contains("--shuffle"));
}

TEST_CASE("a flat archive takes its labels from a labels file, as ImageNet's validation set",
          "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  namespace fs = std::filesystem;
  // The validation layout: every image at the top, its class only in the labels file (Kaggle's
  // LOC_val_solution.csv: a header, then IMAGE,SYNSET and box coordinates).
  fs::create_directories(dir.file("val"));
  std::ofstream csv(dir.file("val.csv"));
  csv << "ImageId,PredictionString\n";
  const char* classes[] = {"cat", "dog", "eel"};
  std::vector<std::int64_t> expected;
  for (int n = 0; n < 12; ++n) {
    const int c = (n * 7) % 3;  // classes interleaved, unlike the sorted folder write
    const std::string image = "val_" + std::to_string(100 + n);
    fs::copy_file(
        dir.file(std::string("tree/") + classes[c] + "/0" + std::to_string(n % 4) + ".jpg"),
        dir.file("val/" + image + ".JPEG"));
    csv << image << "," << classes[c] << " 10 20 30 40\n";
    expected.push_back(c);
  }
  csv << "val_999,eel 1 2 3 4\n";  // a line without an image: allowed
  csv.close();
  REQUIRE(sh("tar --sort=name -cf " + dir.file("val.tar") + " -C " + dir.file("val") + " .") == 0);
  std::string out;
  REQUIRE(write("tar", dir.file("val.tar"), dir.file("val.beton"), out,
                "--labels " + dir.file("val.csv"))
              .substr(0, 4) != "exit");
  LoaderOptions options;
  options.batch_size = 12;
  options.drop_last = false;
  options.default_pipelines = false;
  Loader loader(dir.file("val.beton"), {{"label", "label", nullptr, {}}}, options);
  auto epoch = loader.epoch(0);
  const auto batch = epoch.next();
  REQUIRE(batch.has_value());
  const auto* labels = reinterpret_cast<const std::int64_t*>(batch->output(0).data);
  CHECK(std::vector<std::int64_t>(labels, labels + batch->size()) == expected);
  CHECK_THAT(test::text_of(dir.file("val.beton.sources.json")),
             Catch::Contains("\"classes\": [\"cat\", \"dog\", \"eel\"]"));
  // A labels file without a line for one of the images is refused, naming it.
  std::ofstream(dir.file("short.csv")) << "val_100,cat\nval_101,dog\n";
  CHECK_THAT(write("tar", dir.file("val.tar"), dir.file("short.beton"), out,
                   "--labels " + dir.file("short.csv")),
             Catch::Contains("exit 1") && Catch::Contains("val_102.JPEG has no label in"));
  CHECK_FALSE(fs::exists(dir.file("short.beton")));
  CHECK_THAT(write("folder", dir.file("tree"), dir.file("folder.beton"), out,
                   "--labels " + dir.file("val.csv")),
             Catch::Contains("exit 2") && Catch::Contains("--labels applies to KIND tar only"));
}

TEST_CASE("a tar of class tars is listed by reading its headers, not its members", "[archive]") {
  // ImageNet's training tar: listing it (the first of the writer's two passes) reads each class
  // tar's headers by position and skips the images, so it costs a fraction of the archive.
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  namespace fs = std::filesystem;
  test::TempDir dir;
  // Class tar names longer than a tar header holds: their own long-name headers come first.
  const std::string long_name(110, 'n');
  std::vector<std::string> tars;
  for (int c = 0; c < 3; ++c) {
    const std::string folder = dir.file("class" + std::to_string(c));
    fs::create_directories(folder);
    for (int i = 0; i < 20; ++i) {
      // 400 KB of bytes each: the listing never looks inside a member.
      test::write_file(folder + "/" + std::to_string(i) + ".jpg",
                       std::vector<std::uint8_t>(400'000, static_cast<std::uint8_t>(c + i)));
    }
    tars.push_back(long_name + std::to_string(c) + ".tar");
    REQUIRE(sh("tar --sort=name -cf " + dir.file(tars.back()) + " -C " + folder + " .") == 0);
  }
  std::string names;
  for (const std::string& tar : tars) names += " " + tar;
  REQUIRE(sh("tar --sort=name -cf " + dir.file("train.tar") + " -C " + dir.file("") + names) == 0);
  const auto read_bytes = [] {  // this process's bytes read by read(2) and pread(2)
    std::ifstream io("/proc/self/io");
    std::string key;
    std::uint64_t value = 0;
    while (io >> key >> value) {
      if (key == "rchar:") return value;
    }
    return std::uint64_t{0};
  };
  const std::uint64_t before = read_bytes();
  const tools::ArchiveSource source({dir.file("train.tar")}, std::nullopt, "label");
  const std::uint64_t read = read_bytes() - before;
  CHECK(source.size() == 60);
  CHECK(source.class_names() ==
        std::vector<std::string>{long_name + "0", long_name + "1", long_name + "2"});
  const std::uint64_t archive = fs::file_size(dir.file("train.tar"));
  INFO("listing read " << read << " of the archive's " << archive << " bytes");
  // Headers only, a few KB a member: about 0.2 MB here (a block of 1 MiB per class tar, as
  // libarchive reads a file, would be over 3 MB).
  CHECK(read < archive / 20);
}

TEST_CASE("a member over its size limit is refused by name before it is read", "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  std::string out;
  // A sparse 300 MiB "image": a small tar, which a reader holding whole members would expand.
  REQUIRE(sh("truncate -s 300M " + dir.file("tree/cat/04.jpg")) == 0);
  REQUIRE(sh("tar --sparse --sort=name -cf " + dir.file("big.tar") + " -C " + dir.file("tree") +
             " cat dog eel") == 0);
  REQUIRE(std::filesystem::file_size(dir.file("big.tar")) < (1 << 20));
  CHECK_THAT(write("tar", dir.file("big.tar"), dir.file("big.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("big.tar: cat/04.jpg") &&
                 Catch::Contains("over the 256 MiB"));
  CHECK_FALSE(std::filesystem::exists(dir.file("big.beton")));
  // A .cls label of 2 MiB.
  std::filesystem::remove(dir.file("tree/cat/04.jpg"));
  std::filesystem::create_directories(dir.file("shard"));
  std::filesystem::copy_file(dir.file("tree/cat/00.jpg"), dir.file("shard/00.jpg"));
  REQUIRE(sh("truncate -s 2M " + dir.file("shard/00.cls")) == 0);
  REQUIRE(sh("tar --sparse -cf " + dir.file("cls.tar") + " -C " + dir.file("shard") + " .") == 0);
  CHECK_THAT(
      write("tar", dir.file("cls.tar"), dir.file("cls.beton"), out),
      Catch::Contains("exit 1") && Catch::Contains("00.cls") && Catch::Contains("over the 1 MiB"));
}

TEST_CASE("a compressed archive whose stream is damaged or cut is refused", "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  std::string out;
  REQUIRE(sh("tar --sort=name -czf " + dir.file("tree.tar.gz") + " -C " + dir.file("tree") +
             " cat dog eel") == 0);
  const std::vector<std::uint8_t> whole = test::read_file(dir.file("tree.tar.gz"));
  // The gzip trailer's CRC-32 no longer matches (gzip -t says so): the data may be anything.
  std::vector<std::uint8_t> bad_crc = whole;
  bad_crc[bad_crc.size() - 8] ^= 0x01;
  test::write_file(dir.file("crc.tar.gz"), bad_crc);
  REQUIRE(sh("gzip -t " + dir.file("crc.tar.gz") + " 2>/dev/null") != 0);
  CHECK_THAT(write("tar", dir.file("crc.tar.gz"), dir.file("crc.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("crc.tar.gz") && Catch::Contains("gzip"));
  CHECK_FALSE(std::filesystem::exists(dir.file("crc.beton")));
  // The trailer cut off: the tar inside is whole, the file is not.
  test::write_file(dir.file("cut.tar.gz"),
                   std::vector<std::uint8_t>(whole.begin(), whole.end() - 6));
  CHECK_THAT(write("tar", dir.file("cut.tar.gz"), dir.file("cut.beton"), out),
             Catch::Contains("exit 1") && Catch::Contains("cut.tar.gz"));
  // Zeros after the last member, which gzip -t accepts, are accepted too.
  std::vector<std::uint8_t> padded = whole;
  padded.resize(whole.size() + 512, 0);
  test::write_file(dir.file("padded.tar.gz"), padded);
  const std::string folder = write("folder", dir.file("tree"), dir.file("folder.beton"), out);
  CHECK(write("tar", dir.file("padded.tar.gz"), dir.file("padded.beton"), out) == folder);
}

TEST_CASE("hidden members are passed over as a folder write passes over hidden files",
          "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  namespace fs = std::filesystem;
  test::write_file(dir.file("tree/cat/._00.jpg"), {0, 5, 22, 7, 'M', 'a', 'c'});  // AppleDouble
  fs::copy_file(dir.file("tree/cat/01.jpg"), dir.file("tree/cat/.hidden.jpg"));
  fs::create_directories(dir.file("tree/dog/.cls_hidden"));
  fs::copy_file(dir.file("tree/dog/01.jpg"), dir.file("tree/dog/.cls_hidden/x.jpg"));
  fs::create_directories(dir.file("tree/.git"));
  fs::copy_file(dir.file("tree/dog/01.jpg"), dir.file("tree/.git/y.jpg"));
  test::write_file(dir.file("tree/._cat.tar"), {1, 2, 3});
  std::string out;
  const std::string folder = write("folder", dir.file("tree"), dir.file("folder.beton"), out);
  REQUIRE(folder.size() > 1000);
  REQUIRE(sh("tar --sort=name -cf " + dir.file("tree.tar") + " -C " + dir.file("tree") + " .") ==
          0);
  CHECK(write("tar", dir.file("tree.tar"), dir.file("tar.beton"), out) == folder);
  // Both hold the twelve visible images only.
  CHECK(Reader(dir.file("folder.beton")).num_samples() == 12);
}

TEST_CASE("a hard link is its target's image, links and devices are listed as left out",
          "[archive]") {
  if (!tools::archives_supported()) return test::skip_test("built without libarchive");
  test::TempDir dir;
  make_tree(dir);
  REQUIRE(sh("ln " + dir.file("tree/cat/00.jpg") + " " + dir.file("tree/dog/05.jpg")) == 0);
  REQUIRE(sh("ln -s ../cat/01.jpg " + dir.file("tree/dog/06.jpg")) == 0);
  REQUIRE(sh("mkfifo " + dir.file("tree/eel/07.jpg")) == 0);
  std::ofstream(dir.file("tree/eel/caf\xe9.txt")) << "a name in Latin-1";
  REQUIRE(sh("tar --sort=name -cf " + dir.file("links.tar") + " -C " + dir.file("tree") +
             " cat dog eel") == 0);
  std::string out;
  REQUIRE(write("tar", dir.file("links.tar"), dir.file("links.beton"), out).substr(0, 5) !=
          "exit ");
  const std::string sidecar = test::text_of(dir.file("links.beton.sources.json"));
  CHECK_THAT(sidecar,
             Catch::Contains("dog/06.jpg (symbolic link)") && Catch::Contains("eel/07.jpg (FIFO)"));
  CHECK_THAT(sidecar, !Catch::Contains("dog/05.jpg"));
  // The sidecar stays JSON with a member name that is no UTF-8.
  CHECK_THAT(sidecar, Catch::Contains("eel/caf\\ufffd.txt"));
  CHECK(sh("python3 -c 'import json, sys; json.load(open(sys.argv[1]))' " +
           dir.file("links.beton.sources.json")) == 0);
  // cat 00-03, dog 00-03 and the link dog/05, eel 00-03: the link holds cat/00.jpg's image.
  const Reader reader(dir.file("links.beton"));
  REQUIRE(reader.num_samples() == 13);
  const auto pixels = [&](std::uint64_t sample) {
    const ImageMetadata image = ImageMetadata::load(reader.column(sample, 0));
    return decode_jpeg(reader.payload(image.data_ptr)).pixels;
  };
  CHECK(pixels(8) == pixels(0));
  CHECK(pixels(8) != pixels(1));
}
