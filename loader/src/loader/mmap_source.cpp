// MmapSource: the whole file memory-mapped; the OS page cache does all the caching.

#include <atomic>
#include <string>

#include "ffcv/errors.hpp"
#include "ffcv/mapped_file.hpp"
#include "ffcv/page_source.hpp"

namespace ffcv {
namespace {

class MmapSource final : public PageSource {
 public:
  MmapSource(const std::string& path, std::uint64_t page_size) : file_(path) {
    if (page_size == 0) throw ConfigError(path + ": the page size must be positive");
  }

  void begin_epoch(std::vector<std::vector<std::uint64_t>> batch_pages,
                   std::uint64_t max_batches_in_flight) override {
    if (max_batches_in_flight == 0) {
      throw ConfigError("page source: max_batches_in_flight must be at least 1");
    }
    num_batches_.store(batch_pages.size(), std::memory_order_relaxed);
  }

  void acquire(std::uint64_t batch) override {
    const std::uint64_t num_batches = num_batches_.load(std::memory_order_relaxed);
    if (batch >= num_batches) {
      throw ConfigError("page source: acquire(" + std::to_string(batch) + ") outside the epoch's " +
                        std::to_string(num_batches) + " batches");
    }
  }

  void release(std::uint64_t) override {}
  void end_epoch() override { num_batches_.store(0, std::memory_order_relaxed); }

  std::span<const std::uint8_t> bytes(std::uint64_t ptr, std::uint64_t size) const override {
    const std::uint64_t file_size = file_.size();
    if (ptr > file_size || size > file_size - ptr) {
      throw FormatError(file_.path(),
                        "bytes [" + std::to_string(ptr) + ", " + std::to_string(ptr + size) +
                            ") lie beyond the end of the file (" + std::to_string(file_size) +
                            " bytes)",
                        ptr);
    }
    return file_.bytes().subspan(ptr, size);
  }

  PageSourceStats stats() const override { return {}; }
  std::string describe() const override { return "mmap"; }

 private:
  MappedFile file_;
  std::atomic<std::uint64_t> num_batches_{0};
};

}  // namespace

std::unique_ptr<PageSource> make_mmap_source(const std::string& path, std::uint64_t page_size) {
  return std::make_unique<MmapSource>(path, page_size);
}

}  // namespace ffcv
