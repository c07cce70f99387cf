// The limit of writing a folder of JPEGs on a number of cores: the image field's own encode (the
// decode, resize and encode, or the check of a kept JPEG, each image needs) over every image
// held in memory, with no file reading, no queues and no page writing; on one thread, and on
// THREADS threads at once, each over its own share of the images (so that what cores lose to
// each other, shared caches and clocks, counts as the machine's and not as the writer's).
//
// It runs twice: with the writer's defaults (ours) and with same_as_ffcv, the work Python FFCV's
// writer does per image at the least (full decode, OpenCV INTER_AREA, every JPEG encoded again).
// In raw mode it also says how close the two paths' pixels are (PSNR, and the largest difference
// of one value), over the images that were resized.
//
// The bytes a write stores cannot be skipped either: the limit with them also takes our stored
// payloads through what any writer must do with them at the least, each copied once into an
// aligned 8 MiB page of a ring larger than the caches, as the writer copies them (CPU, shared
// by the cores; the copy into one page that stays cached is reported beside it, not used) and
// the pages written to a file in OUT_DIR past the page cache and flushed. The writes take the
// disk's time, beside the CPU's, and CPU time too: the system calls, and on a virtual machine
// the guest's block-device work that completes them (kernel workers, not this process),
// measured as the whole machine's busy time from /proc/stat while the pages are written:
//   limit with the bytes = images / max(encode on THREADS + (copy + writes' CPU) / THREADS,
//                                       page writes).
// A shared machine's speed and a disk's change over a minute (cloud disks throttle sustained
// writes), so a benchmark measures the encode (--encode-only) and the page writes (--pages)
// again beside each run of the writer and pairs them.
//
// Usage: ffcv_write_limit DIR MODE MAX_RESOLUTION QUALITY COMPRESS_PROB THREADS OUT_DIR
//        ffcv_write_limit --encode-only DIR MODE MAX_RESOLUTION QUALITY COMPRESS_PROB THREADS
//        ffcv_write_limit --pages BYTES OUT_DIR
// Prints one JSON object: images/s on one thread and on THREADS, for our work and FFCV's, and
// the limit with the bytes; with --encode-only, our encode on THREADS alone; with --pages, the
// time and machine CPU time of writing BYTES in 8 MiB pages.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#include "ffcv/fields/rgb_image_field.hpp"
#include "ffcv/image/jpeg_codec.hpp"
#include "ffcv/util/atomic_file.hpp"
#include "ffcv/util/copy_past_cache.hpp"
#include "ffcv/util/direct_write_buffer.hpp"
#include "ffcv/util/json_text.hpp"

namespace {

std::vector<std::vector<std::uint8_t>> read_jpegs(const std::string& root) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string extension = entry.path().extension().string();
    if (entry.is_regular_file() && (extension == ".jpg" || extension == ".jpeg")) {
      paths.push_back(entry.path().string());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::vector<std::uint8_t>> files;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

struct Pass {
  double seconds = 0;
  std::vector<std::vector<std::uint8_t>> stored;  // each image's payload (raw mode: pixels)
};

// Encodes images first, first + step, ... (every image with step 1).
void encode_share(const std::vector<std::vector<std::uint8_t>>& files,
                  const ffcv::RgbImageField& field, std::size_t first, std::size_t step,
                  std::vector<std::vector<std::uint8_t>>* stored) {
  std::vector<std::uint8_t> column(field.column_type().size);
  for (std::size_t i = first; i < files.size(); i += step) {
    std::vector<ffcv::EncodedAllocation> heap;
    field.encode(ffcv::JpegFile{files[i]}, column.data(), heap, {i, 0, nullptr});
    if (stored != nullptr) stored->push_back(std::move(heap.front().bytes));
  }
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The field's encode of the first hundred images on this thread, untimed: the codec's handles
// and buffers set up, the code and tables in cache.
void warm_up(const std::vector<std::vector<std::uint8_t>>& files,
             const ffcv::RgbImageField& field) {
  const std::vector<std::vector<std::uint8_t>> warm(
      files.begin(), files.begin() + std::min<std::size_t>(files.size(), 100));
  encode_share(warm, field, 0, 1, nullptr);
}

// One thread over every image, after a warm-up. The payloads are kept from a second, untimed
// pass (holding them all in the timed one would time page faults).
Pass encode_all(const std::vector<std::vector<std::uint8_t>>& files,
                const ffcv::RgbImageOptions& options, bool keep_payloads) {
  const ffcv::RgbImageField field(options);
  warm_up(files, field);
  Pass pass;
  const auto start = std::chrono::steady_clock::now();
  encode_share(files, field, 0, 1, nullptr);
  pass.seconds = seconds_since(start);
  if (keep_payloads) encode_share(files, field, 0, 1, &pass.stored);
  return pass;
}

// `threads` threads at once, thread t over images t, t + threads, ...
double encode_on_threads(const std::vector<std::vector<std::uint8_t>>& files,
                         const ffcv::RgbImageOptions& options, int threads) {
  const ffcv::RgbImageField field(options);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] { encode_share(files, field, t, threads, nullptr); });
  }
  for (std::thread& thread : pool) thread.join();
  return seconds_since(start);
}

// Mean PSNR, lowest PSNR and largest difference over the images whose pixels differ in size
// from their source (the resized ones), between two raw passes.
std::string agreement_json(const std::vector<std::vector<std::uint8_t>>& files, const Pass& ours,
                           const Pass& reference) {
  double sum = 0, lowest = 1e9;
  int largest = 0, count = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const ffcv::JpegInfo info = ffcv::read_jpeg_info(files[i]);
    if (ours.stored[i].size() == std::size_t(info.width) * info.height * 3) continue;
    double squared = 0;
    for (std::size_t k = 0; k < ours.stored[i].size(); ++k) {
      const int d = int(ours.stored[i][k]) - int(reference.stored[i][k]);
      squared += double(d) * d;
      largest = std::max(largest, std::abs(d));
    }
    const double mse = std::max(squared / double(ours.stored[i].size()), 1e-10);
    const double psnr = std::min(99.0, 10 * std::log10(255.0 * 255.0 / mse));
    sum += psnr;
    lowest = std::min(lowest, psnr);
    ++count;
  }
  if (count == 0) return "null";
  return "{\"resized_images\": " + std::to_string(count) +
         ", \"psnr_mean_db\": " + ffcv::json_number(sum / count, 2) +
         ", \"psnr_lowest_db\": " + ffcv::json_number(lowest, 2) +
         ", \"largest_difference\": " + std::to_string(largest) + "}";
}

constexpr std::size_t kPage = 8 << 20;

// The whole machine's busy CPU seconds so far (user, nice, system, irq and softirq time of
// /proc/stat's first line); 0 where there is no /proc/stat.
double machine_busy_seconds() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  if (!(stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq)) return 0;
  return static_cast<double>(user + nice + system + irq + softirq) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct PageWrites {
  std::size_t pages = 0;
  double seconds = 0;      // wall time, until the file is flushed
  double cpu_seconds = 0;  // the machine's busy time meanwhile
};

// Writes `pages` copies of `page` (kPage bytes, block-aligned) to a file in `out_dir` as the
// writer writes its pages (AtomicFile::write_blocks_at), flushed; the file is removed after.
PageWrites write_pages(const std::uint8_t* page, std::size_t pages, const std::string& out_dir) {
  PageWrites writes;
  writes.pages = pages;
  const double busy = machine_busy_seconds();
  const auto start = std::chrono::steady_clock::now();
  {
    ffcv::AtomicFile file(out_dir + "/write-limit-pages.bin");
    for (std::size_t p = 0; p < pages; ++p) file.write_blocks_at(p * kPage, page, kPage);
    file.commit();
  }
  writes.seconds = seconds_since(start);
  writes.cpu_seconds = std::max(0.0, machine_busy_seconds() - busy);
  std::filesystem::remove(out_dir + "/write-limit-pages.bin");
  return writes;
}

// A page as the writer allocates its pages (DirectWriteBuffer: in huge pages where it can be),
// filled with bytes no storage layer can compress or deduplicate, as image payloads are.
struct AlignedPage {
  AlignedPage() : buffer(kPage) {
    if (buffer.data() == nullptr) throw std::bad_alloc();
    std::uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (std::size_t i = 0; i + 8 <= kPage; i += 8) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      std::memcpy(data() + i, &state, 8);
    }
  }
  std::uint8_t* data() const { return buffer.data(); }
  ffcv::DirectWriteBuffer buffer;
};

struct BytesCost {
  std::uint64_t bytes = 0;
  double copy_seconds = 0;      // into a ring of pages, as a writer's pages leave the cache
  double hot_copy_seconds = 0;  // the same into one page that stays in the cache, for reference
  PageWrites writes;
};

// Pages a writer cycles through: more than any last-level cache holds (64 MiB), so the copy
// pays for its bytes reaching memory, where the disk's DMA reads them.
constexpr std::size_t kRingPages = 8;

// Copies every payload once into pages of a ring (the copy's time; with copy_past_cache, as the
// writer copies), and once more into a single page for reference; then writes as many full
// pages to a file in `out_dir`, flushed to disk (the writes' time and CPU).
BytesCost bytes_cost(const std::vector<std::vector<std::uint8_t>>& payloads,
                     const std::string& out_dir) {
  std::vector<AlignedPage> ring(kRingPages);
  BytesCost cost;
  const auto copy_all = [&](bool one_page) {
    std::size_t used = 0, pages = 1;
    const auto start = std::chrono::steady_clock::now();
    for (const auto& payload : payloads) {
      if (used + payload.size() > kPage) used = 0, ++pages;
      std::uint8_t* page = ring[one_page ? 0 : pages % kRingPages].data();
      ffcv::copy_past_cache(page + used, payload.data(), std::min(payload.size(), kPage));
      used += std::min(payload.size(), kPage);
    }
    return std::pair{seconds_since(start), pages};
  };
  for (const auto& payload : payloads) cost.bytes += payload.size();
  const auto [seconds, pages] = copy_all(false);
  cost.copy_seconds = seconds;
  cost.hot_copy_seconds = copy_all(true).first;
  cost.writes = write_pages(ring[0].data(), pages, out_dir);
  return cost;
}

std::string page_writes_json(const PageWrites& writes) {
  return "\"pages\": " + std::to_string(writes.pages) +
         ", \"page_write_seconds\": " + ffcv::json_number(writes.seconds, 4) +
         ", \"page_write_cpu_seconds\": " + ffcv::json_number(writes.cpu_seconds, 4);
}

// --pages BYTES OUT_DIR: the page writes alone, for BYTES of payloads.
int pages_only(const std::string& bytes_text, const std::string& out_dir) {
  const std::uint64_t bytes = std::stoull(bytes_text);
  const AlignedPage page;
  const PageWrites writes =
      write_pages(page.data(), std::max<std::uint64_t>(1, (bytes + kPage - 1) / kPage), out_dir);
  std::printf("{\"bytes\": %llu, %s}\n", static_cast<unsigned long long>(bytes),
              page_writes_json(writes).c_str());
  return 0;
}

// The image field's options from MODE MAX_RESOLUTION QUALITY COMPRESS_PROBABILITY.
ffcv::RgbImageOptions image_options(char** arguments) {
  ffcv::RgbImageOptions options;
  options.write_mode = ffcv::parse_image_write_mode(arguments[0]);
  options.max_resolution = std::stoi(arguments[1]);
  options.jpeg_quality = std::stoi(arguments[2]);
  options.compress_probability = std::stod(arguments[3]);
  return options;
}

// --encode-only DIR MODE MAX_RESOLUTION QUALITY COMPRESS_PROBABILITY THREADS: our encode on
// THREADS threads alone, after a warm-up, to pair with one run of
// the writer (the machine's speed changes from one minute to the next too).
int encode_only(char** arguments) {
  const auto files = read_jpegs(arguments[0]);
  const ffcv::RgbImageOptions options = image_options(arguments + 1);
  const int threads = std::max(1, std::stoi(arguments[5]));
  warm_up(files, ffcv::RgbImageField(options));
  std::printf("{\"images\": %zu, \"threads\": %d, \"encode_threads_seconds\": %.4f}\n",
              files.size(), threads, encode_on_threads(files, options, threads));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string first = argc > 1 ? argv[1] : "";
  const bool pages = argc == 4 && first == "--pages";
  const bool encode = argc == 8 && first == "--encode-only";
  const bool flag = first.rfind("--", 0) == 0;
  if ((argc < 8 && !pages) || (flag && !pages && !encode)) {
    std::fprintf(stderr,
                 "usage: ffcv_write_limit DIR MODE MAX_RESOLUTION QUALITY COMPRESS_PROB "
                 "THREADS OUT_DIR\n       ffcv_write_limit --encode-only DIR MODE "
                 "MAX_RESOLUTION QUALITY COMPRESS_PROB THREADS\n       ffcv_write_limit "
                 "--pages BYTES OUT_DIR\n");
    return 2;
  }
  try {
    if (pages) return pages_only(argv[2], argv[3]);
    if (encode) return encode_only(argv + 2);
    const auto files = read_jpegs(argv[1]);
    ffcv::RgbImageOptions options = image_options(argv + 2);
    const int threads = std::max(1, std::stoi(argv[6]));
    const bool raw = options.write_mode == ffcv::ImageWriteMode::kRaw;
    Pass ours = encode_all(files, options, true);
    const double ours_threads = encode_on_threads(files, options, threads);
    const BytesCost cost = bytes_cost(ours.stored, argv[7]);
    const double with_bytes =
        std::max(ours_threads + (cost.copy_seconds + cost.writes.cpu_seconds) / threads,
                 cost.writes.seconds);
    options.same_as_ffcv = true;
    const Pass ffcv_work = encode_all(files, options, raw);
    if (!raw) ours.stored.clear();
    const double ffcv_threads = encode_on_threads(files, options, threads);
    const double n = static_cast<double>(files.size());
    std::printf(
        "{\"images\": %zu, \"threads\": %d, \"ours_images_per_s\": %.1f, "
        "\"ours_threads_images_per_s\": %.1f, \"ffcv_work_images_per_s\": %.1f, "
        "\"ffcv_work_threads_images_per_s\": %.1f, \"encode_threads_seconds\": %.4f, "
        "\"stored_bytes\": %llu, \"copy_seconds\": %.4f, \"hot_copy_seconds\": %.4f, %s, "
        "\"with_bytes_images_per_s\": %.1f, \"agreement\": %s}\n",
        files.size(), threads, n / ours.seconds, n / ours_threads, n / ffcv_work.seconds,
        n / ffcv_threads, ours_threads, static_cast<unsigned long long>(cost.bytes),
        cost.copy_seconds, cost.hot_copy_seconds, page_writes_json(cost.writes).c_str(),
        n / with_bytes, raw ? agreement_json(files, ours, ffcv_work).c_str() : "null");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ffcv_write_limit: %s\n", error.what());
    return 1;
  }
}
